"""The efficiency study's report: inputs, the loaded RTT, the study's figures, the simulator cross-checks,
options, discussion.

Every sentence that compares with the study comes from a verdict
(:mod:`latlab.studies.efficiency.verdicts`); every other number is measured
or derived from the inputs here, never typed in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from latlab.studies._markdown import table as _table
from latlab.studies._verdict import Verdict
from latlab.studies.efficiency import verdicts as judge
from latlab.studies.efficiency.cases import NOTE_SIZES, PROFILES, REFERENCE_SIZE, SEED, Settings
from latlab.studies.efficiency.metrics import at_size
from latlab.studies.efficiency.references import PAPER, REFERENCES


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _size(n: float) -> str:
    from latlab.models.efficiency_plot import size_label

    return "320 KiB" if n == REFERENCE_SIZE else size_label(n)


_at = at_size


#: The baseline row of the options table, which every other case is read against.
OPTIONS_BASELINE = "exact model, IW 10 (baseline)"


#: A change of mean efficiency below this (half a point) counts as none.
NO_CHANGE = 0.005


def _direction_words(moves: dict[str, dict[int, float]], sizes: list[int]) -> str:
    """ "raises efficiency at every size", "raises efficiency at 100 KB, 1 MB and leaves 10 KB within half a point", ...

    By the mean change over the profiles at each size.
    """
    mean = {s: float(np.mean([m[s] for m in moves.values()])) for s in sizes}  # over the profiles
    up = [s for s in sizes if mean[s] > NO_CHANGE]
    down = [s for s in sizes if mean[s] < -NO_CHANGE]
    same = [s for s in sizes if s not in up and s not in down]

    def at(xs: list[int]) -> str:
        return ", ".join(_size(x) for x in xs)

    if up and not down and not same:
        return "raises efficiency at every size"
    if down and not up and not same:
        return "lowers efficiency at every size"
    parts = ([f"raises efficiency at {at(up)}"] if up else []) + (
        [f"lowers {'it' if up else 'efficiency'} at {at(down)}"] if down else []
    )
    if same:
        parts.append(f"leaves {at(same)} within half a point")
    return " and ".join(parts) if parts else "leaves efficiency within half a point at every size"


def _options_findings(options: pd.DataFrame, sizes: list[int]) -> str:
    """For each option, how it moves mean efficiency from the baseline, and at which size the most: from the table."""
    parts = []
    for case in dict.fromkeys(options["case"]):
        if case == OPTIONS_BASELINE:
            continue
        moves = {}
        for n in PROFILES:
            sel = options[options["profile"] == n].set_index(["case", "size_bytes"])["mean"]
            moves[n] = {s: float(sel[(case, s)] - sel[(OPTIONS_BASELINE, s)]) for s in sizes}
        sign = _direction_words(moves, sizes)
        largest = {n: max(m, key=lambda s: abs(m[s])) for n, m in moves.items()}
        where = "; ".join(
            f"{n}: most at {_size(largest[n])} ({100 * moves[n][largest[n]]:+.1f} points)"
            for n in PROFILES
        )
        parts.append(f"*{case}* {sign} against the baseline (mean of the profiles; {where})")
    return "Read from the table: " + ". ".join(parts) + "." if parts else ""


def _loaded_check_findings(lcheck: pd.DataFrame) -> str:
    """What the loaded check says about the lossless model, from the medians: within 10 % counts as matching."""
    out = []
    for n in PROFILES:
        ld = lcheck[lcheck["profile"] == n]
        agg = ld.groupby("size_bytes").agg(
            sim=("fct_s", "median"),
            ml=("model_loaded_s", "first"),
            mu=("model_unloaded_s", "first"),
        )
        ratio = agg["sim"] / agg["ml"]
        single = float((agg["sim"] / agg["mu"] - 1).abs().median())
        small = ratio[ratio.index <= 10 * 1448]
        large = ratio[ratio.index > 10 * 1448]
        if not len(small) or not len(large):
            continue
        small_word = (
            "within 10 % of the lossless model"
            if (small - 1).abs().max() <= 0.1
            else f"up to {_pct(float((small - 1).abs().max()))} off the lossless model"
        )
        large_word = (
            f"the model is optimistic for larger flows (median {large.median():.2f}× its time)"
            if large.median() > 1.1
            else f"larger flows take {large.median():.2f}× the model's time (median)"
        )
        loaded = float((ratio - 1).abs().median())
        out.append(
            f"{n}: flows within the initial window are {small_word}; {large_word}; the single-flow model (C, R_O) "
            f"is off by a median {_pct(single)} against {_pct(loaded)} for the model with C/2 and R_S"
        )
    return ("; ".join(out) + ".") if out else ""


def _verdicts(curves: pd.DataFrame, loaded: dict[str, Any]) -> dict[str, Verdict]:
    """Every verdict of the study, by reference key."""
    from latlab.models import profiles

    unloaded = {
        n: tuple(float(profiles.load(n).rtt_ms.quantile(q)[0]) for q in (0.05, 0.5, 0.95))
        for n in PROFILES
    }
    sampled = {
        n: tuple(float(v) for v in np.percentile(loaded["samples"][n] * 1e3, [5, 50, 95]))
        for n in PROFILES
    }
    out = {"single_flow_order": judge.single_flow_order(curves, _size)}
    out.update(judge.loaded_rtt(unloaded, sampled))
    return out


def render(
    settings: Settings,
    quick: bool,
    loaded: dict[str, Any],
    curves: pd.DataFrame,
    options: pd.DataFrame,
    check: pd.DataFrame,
    lcheck: pd.DataFrame,
) -> str:
    from latlab.models import latency, loaded_rtt, profiles

    profs = loaded["profiles"]
    base = {n: profiles.load(n) for n in PROFILES}
    vs = _verdicts(curves, loaded)
    out: list[str] = []
    add = out.append
    add("# Short-flow protocol efficiency in 3.5G and 4G networks\n")
    add(
        f"Reproduction of the cellular efficiency study ({PAPER.citation()}). The model and its inputs are described "
        "in latlab's notes [latency model](../models/latency-model.md) and [TCP](../models/tcp.md). "
        + (
            "**Quick run** (`--quick`): fewer draws, a coarser grid and fewer simulations than the full "
            "reproduction, so its numbers are not the full run's.\n"
            if quick
            else "Full run: `latlab reproduce efficiency`.\n"
        )
    )
    add(
        "**The study's findings, the reference points** (its figures are plots; no efficiency numbers are quoted "
        "from it, so the comparison is qualitative): "
        + "; ".join(f"{r.quantity.lower()}: {r.text()}" for r in REFERENCES.values())
        + ".\n"
    )
    add(
        "| reference | study | latlab | rule | verdict |\n|---|---|---|---|---|\n"
        + "\n".join(
            f"| {v.reference.quantity} | {v.reference.text()} | {v.measured} | {v.rule} | {v.label()} |"
            for v in vs.values()
        )
        + "\n"
    )

    # -- inputs
    add("## Inputs\n")
    add(
        "Protocol efficiency E = L_O / L_S: the ideal time L_O = R + O/C (one RTT of set-up, then the full capacity "
        "at once) over the completion time L_S of a TCP flow of O bits (handshake included), both for the same "
        "capacity C and RTT R. With one background flow (N = 2 flows) the new flow gets C/2 and sees the loaded RTT "
        "R_S, the ideal gets C/2 at once with the unloaded R_O: L_O = R_O + 2·O/C. (The study writes the ideal as "
        "R_O + (O/C)/N; latlab reads it as the time at the flow's fair share, O/(C/N), since sharing cannot make a "
        "transfer faster.)\n"
    )
    rows = []
    for n in ("3G",) + PROFILES:
        p = profiles.load(n)
        rows.append(
            [n, p.throughput_kbps.describe(), p.rtt_ms.describe(), p.capacity_description()]
        )
    add("Network profiles (`latlab/data/profiles/*.toml`), the study's Table I (kbit/s and ms):\n")
    add(
        _table(
            [
                "profile",
                "TCP downlink throughput (kbit/s)",
                "handshake RTT (ms)",
                "capacity C in the model",
            ],
            rows,
        )
    )
    add(
        "\n* **C.** The downlink throughput percentiles mix short and long flows; the 95th percentile stands for the "
        "long-flow throughput, which the study used as the capacity C. The built-in profiles therefore fix C at the "
        "95th percentile; the options table below shows the effect of drawing C from the whole distribution instead."
    )
    add(
        "* **Interpolation.** Between two given percentiles log(value) is linear in the normal score Φ⁻¹(p) (a "
        "log-normal through the two points); beyond the outermost percentiles the value is held (no invented tails). "
        "A draw is z ~ N(0, 1) through that quantile function; C and R are drawn independently."
    )
    add(
        "* **Units.** Measured throughput is goodput, so the Monte-Carlo runs in payload units: S = 1448 B "
        "(MSS with timestamps), O = flow size, IW 10 (the study's settings). Sizes are decimal (1 KB = 1000 B)."
    )
    add(
        f"* **Draws.** {settings.n_samples:,} draws per profile and case, the same draws for every flow size; "
        f"{settings.per_decade} sizes per decade from 1 KB to 10 MB, plus the study's 320 KiB reference flow.\n"
    )

    add("### The loaded RTT (one background flow), from latlab's simulator\n")
    add(
        "The study measured the handshake RTT of new flows while a background flow ran, but printed no numbers. "
        "latlab simulates it (`latlab.models.loaded_rtt`): one per-user bottleneck link of rate C and one-way delay "
        "R_O/2 (R_O from a stratum of the unloaded RTT distribution), a DropTail buffer, one long CUBIC flow (linux "
        "preset) from time 0, and one-segment probe flows (delayed ACK off) at uniformly random times after a 10 s "
        "warm-up; each probe's handshake RTT is one sample.\n"
    )
    add(
        "**Buffer assumptions.** The study attributes the loaded 3.5G RTT to a bloated shared per-user buffer, and "
        "saw 4G barely change:\n"
    )
    rows = []
    for n in PROFILES:
        c, _ = profs[n].typical()
        b = profs[n].buffer_bytes or 0
        rows.append(
            [
                n,
                f"{b / 1000:.0f} kB ({b / 1500:.0f} full packets)",
                f"{b * 8 / c * 1e3:.0f} ms at C",
            ]
        )
    add(_table(["profile", "per-user buffer", "queueing delay when full"], rows))
    buf = {n: (profs[n].buffer_bytes or 0) / 1000 for n in PROFILES}
    add(
        f"\n3.5G: {buf['3.5G']:.0f} kB sits in the several-hundred-kilobyte range reported for HSPA per-user (RLC/RNC) "
        f"queues; 4G: {buf['4G']:.0f} kB, a short standing queue, as LTE per-bearer queues with discard timers keep "
        "it. Both are assumptions; they are stored in the profile files (`[bottleneck] buffer_bytes`) and can be "
        "changed there.\n"
    )
    rows = []
    for n in PROFILES:
        s = loaded["samples"][n] * 1e3
        unl = base[n].rtt_ms
        runs = loaded["runs"][loaded["runs"]["profile"] == n]
        rows.append(
            [
                n,
                f"{float(unl.quantile(0.05)[0]):.0f} / {float(unl.quantile(0.5)[0]):.0f} / "
                f"{float(unl.quantile(0.95)[0]):.0f}",
                " / ".join(f"{v:.0f}" for v in np.percentile(s, [5, 50, 95])),
                f"{len(runs)} runs, {s.size} probes ({int(runs['excluded'].sum())} left out)",
                f"{runs['background_goodput_bps'].mean() / 1e6:.1f} Mbit/s",
            ]
        )
    add(
        _table(
            [
                "profile",
                "unloaded RTT p5/p50/p95 (ms)",
                "loaded RTT p5/p50/p95 (ms)",
                "samples",
                "background flow goodput",
            ],
            rows,
        )
    )
    add("\n![loaded RTT](fig_loaded_rtt.png)\n")
    add(
        " ".join(vs[k].sentence() for k in ("loaded_rtt_35g", "loaded_rtt_4g") if k in vs)
        + " The distributions are "
        f"written as profile variants (`profiles/<name>{profiles.LOADED_SUFFIX}.toml` in the output folder; the files "
        f"shipped in `latlab/data/profiles/` come from the full run). Probes that lost a packet, timed out or took longer "
        f"than the initial RTO are left out (method: {loaded['runs']['method'].iloc[0]}).\n"
    )

    # -- the study's figures
    add("## The study's figures, as latlab computes them\n")
    add(
        "Solid lines: mean efficiency with the study's published formula; shaded: 5–95 % of the draws; dashed: "
        "median. Dotted: the mean with latlab's exact model.\n"
    )
    add("![efficiency, single flow](fig_efficiency_single.png)\n")
    add("![efficiency, one background flow](fig_efficiency_background.png)\n")
    rows = []
    for n in PROFILES:
        for nf in (1, 2):
            for v in ("published", "exact"):
                cells = [n, "single flow" if nf == 1 else "1 background flow", v]
                for size in list(NOTE_SIZES) + [REFERENCE_SIZE]:
                    r = _at(curves, n, nf, v, size)
                    cells.append(f"{_pct(r['mean'])} ({_pct(r['p5'])}–{_pct(r['p95'])})")
                rows.append(cells)
    add("Mean efficiency (5th–95th percentile):\n")
    add(
        _table(
            ["profile", "traffic", "formula"]
            + [_size(s) for s in list(NOTE_SIZES) + [REFERENCE_SIZE]],
            rows,
        )
    )
    add("")
    lo = {}
    for n in PROFILES:
        sel = curves[
            (curves["profile"] == n) & (curves["n_flows"] == 1) & (curves["variant"] == "published")
        ]
        i = int(np.argmin(sel["mean"].to_numpy()))
        lo[n] = (sel["size_bytes"].iloc[i], sel["mean"].iloc[i])
    bdp = {n: profs[n].typical()[0] * profs[n].typical()[1] / 8e3 for n in PROFILES}
    add(
        "The minimum of the mean efficiency (published formula, single flow) lies at "
        + ", ".join(f"{_size(lo[n][0])} for {n} ({_pct(lo[n][1])})" for n in PROFILES)
        + ": flows of that size spend most rounds idle in slow start, waiting for ACKs while the window is below "
        "the bandwidth-delay product. The bandwidth-delay products are C·R ≈ "
        + ", ".join(f"{bdp[n]:.0f} kB for {n}" for n in PROFILES)
        + "; the larger one costs more idle rounds. "
        + vs["single_flow_order"].sentence()
        + "\n"
    )

    # -- cross-check
    add("## Cross-check: the exact model against the packet simulator\n")
    plain = check[~check["delayed_ack"]]
    add(
        "Finite flows over a lossless link in latlab's packet simulator: a custom two-node topology per flow size "
        '(link rate C, delay R/2 each way, a buffer that never fills), "linux" preset (MSS 1448 B + 52 B of '
        "headers, timestamps), IW 10, delayed ACK off, NewReno (plain slow start; nothing is lost), one flow per "
        "size, all sizes in one run. The model is evaluated in wire units: C = link rate, S = 1500 B, O = payload "
        "plus 52 B per segment (the last segment counted at its real length). Tolerance: one segment time S/C.\n"
    )
    rows = []
    for n in PROFILES:
        d = plain[plain["profile"] == n]
        dev = (d["sim_s"] - d["exact_s"]) / d["tolerance_s"]
        pub = d["published_s"] / d["sim_s"] - 1
        k1 = d[d["size_bytes"] <= 10 * 1448]
        rows.append(
            [
                n,
                f"{d['capacity_bps'].iloc[0] / 1e6:.4g} Mbit/s, {d['rtt_s'].iloc[0] * 1e3:.3g} ms",
                f"{d['tolerance_s'].iloc[0] * 1e3:.3f} ms",
                len(d),
                f"{np.abs(dev).max():.3f} S/C",
                "yes" if bool((np.abs(dev) <= 1).all()) else "**no**",
                f"+{1e3 * (k1['published_s'] - k1['sim_s']).mean():.1f} ms (+{_pct((k1['published_s'] / k1['sim_s'] - 1).mean())})",
                f"{_pct(pub.max())} at {_size(d['size_bytes'].iloc[int(np.argmax(pub.to_numpy()))])}",
                f"{_pct(pub.abs().median())}",
            ]
        )
    add(
        _table(
            [
                "profile",
                "C, R",
                "S/C",
                "sizes",
                "max abs(sim − exact)",
                "within S/C",
                "published − sim, flows within IW",
                "published, largest error",
                "published, median abs error",
            ],
            rows,
        )
    )
    add("\n![cross-check](fig_crosscheck.png)\n")
    k1_over = [
        float((d["published_s"] / d["sim_s"] - 1)[d["size_bytes"] <= 10 * 1448].mean())
        for d in (plain[plain["profile"] == n] for n in PROFILES)
    ]
    same_from = []
    for n in PROFILES:
        d = plain[plain["profile"] == n].sort_values("size_bytes")
        differs = np.abs(d["published_s"].to_numpy() / d["exact_s"].to_numpy() - 1) > 1e-9
        last = int(np.nonzero(differs)[0].max()) if differs.any() else -1
        same_from.append(
            f"{_size(d['size_bytes'].iloc[last + 1])} for {n}"
            if last + 1 < len(d)
            else f"never for {n}"
        )
    worst_dev = float(np.abs((plain["sim_s"] - plain["exact_s"]) / plain["tolerance_s"]).max())
    add(
        f"The exact model and the simulator are at most {worst_dev:.2f} segment times apart on the grid "
        "(the remainder is the SYN and ACK serialisation). The published formula departs in two ways: for a flow "
        "that fits in the initial window it adds one idle round, R + S/C − I·S/C (close to one RTT), so it "
        f"overestimates the completion time of flows up to {10 * 1448 / 1e3:.1f} kB (the initial window) by "
        f"{_pct(min(k1_over))}–{_pct(max(k1_over))} (mean per profile); and, with log2(1 + x) instead of "
        "log2 x and an idle round counted after the last window, it charges mid-sized flows one round too many "
        "whenever their last window still leaves the link idle. It coincides with the exact model from "
        + ", ".join(same_from)
        + " on this grid, where slow start has filled the pipe before the last window.\n"
    )

    # -- accuracy
    add("## What delayed ACKs and a loaded buffer do to the model's accuracy\n")
    rows = []
    for n in PROFILES:
        d = check[(check["profile"] == n) & (check["delayed_ack"])]
        r_exact = d["sim_s"] / d["exact_s"]
        r_dack = d["sim_s"] / d["delack_model_s"]
        ld = lcheck[lcheck["profile"] == n]
        agg = (
            ld.groupby("size_bytes")
            .agg(
                sim=("fct_s", "median"),
                ml=("model_loaded_s", "first"),
                mu=("model_unloaded_s", "first"),
                lossy=("retransmitted_segments", lambda x: (x > 0).mean()),
            )
            .reset_index()
        )
        rl, ru = agg["sim"] / agg["ml"], agg["sim"] / agg["mu"]
        rows.append(
            [
                n,
                f"{r_exact.min():.2f}–{r_exact.max():.2f}",
                f"{r_dack.min():.3f}–{r_dack.max():.3f}",
                f"{rl.min():.2f}–{rl.max():.2f} (median {rl.median():.2f})",
                f"{ru.min():.2f}–{ru.max():.2f}",
                _pct(float((ld["retransmitted_segments"] > 0).mean())),
            ]
        )
    add(
        _table(
            [
                "profile",
                "delayed ACK: sim / exact model",
                "delayed ACK: sim / delayed-ACK model",
                "loaded buffer: sim / model (C/2, R_S)",
                "loaded buffer: sim / single-flow model",
                "loaded: flows with losses",
            ],
            rows,
        )
    )
    add("\n![accuracy](fig_accuracy.png)\n")
    dk = check[check["delayed_ack"]]
    worst_exact = float((dk["sim_s"] / dk["exact_s"]).max())
    worst_dack = float(np.abs(dk["sim_s"] / dk["delack_model_s"] - 1).max())
    dack = latency.DelayedAck()
    add(
        f"* **Delayed ACKs** (Linux: an ACK every {dack.segments} segments, {dack.timeout_s * 1e3:g} ms timer). Slow "
        f"start grows by ×1.5 per round instead of ×2, and an odd last segment waits for the timer, so the model "
        f"without delayed ACKs underestimates the completion time by up to {_pct(worst_exact - 1)}: one "
        f"{dack.timeout_s * 1e3:g} ms timer for tiny flows with an odd number of segments, slower window growth for "
        "mid-sized flows. "
        f"latlab's delayed-ACK variant (window +1 segment per ACK, first ACK of a round after 2 segments, ACK "
        f"pairing followed across rounds) stays within {_pct(worst_dack)} of the simulator on this grid."
    )
    parts = []
    for n in PROFILES:
        ld = lcheck[lcheck["profile"] == n]
        agg = (
            ld.groupby("size_bytes")
            .agg(sim=("fct_s", "median"), ml=("model_loaded_s", "first"))
            .reset_index()
        )
        ratio = agg["sim"] / agg["ml"]
        small = ratio[agg["size_bytes"] <= 10 * 1448]
        large = ratio[agg["size_bytes"] > 10 * 1448]
        lossy_small = float(
            (ld.loc[ld["size_bytes"] <= 10 * 1448, "retransmitted_segments"] > 0).mean()
        )
        lossy_large = float(
            (ld.loc[ld["size_bytes"] > 10 * 1448, "retransmitted_segments"] > 0).mean()
        )
        rto = float((ld["timeouts"] > 0).mean())
        parts.append(
            f"{n}: flows within the initial window {small.min():.2f}–{small.max():.2f}× the model "
            f"({_pct(lossy_small)} of them lost a packet), larger flows {large.min():.2f}–{large.max():.2f}× "
            f"(median {large.median():.2f}×; {_pct(lossy_large)} lost packets); {_pct(rto)} of all flows "
            f"waited for a retransmission timeout"
        )
    add(
        f"* **A loaded buffer.** Each flow starts at a random time after a 10 s warm-up on a bottleneck where a "
        f"CUBIC flow keeps the buffer full ({settings.loaded_check_seeds} start times per size; medians). Against "
        f"the lossless model with the fair share C/2 and the simulated loaded RTT R_S: "
        + "; ".join(parts)
        + ". "
        + _loaded_check_findings(lcheck)
        + "\n"
    )

    # -- options
    add("## Options the study did not have\n")
    add(
        "Mean efficiency, single flow, exact model unless stated (TFO: data in the SYN, one RTT less; larger IW: "
        "fewer idle rounds; delayed ACK: slower slow start and ACK timers):\n"
    )
    sizes = list(NOTE_SIZES) + [REFERENCE_SIZE]
    rows = []
    for n in PROFILES:
        for case in dict.fromkeys(options["case"]):
            sel = options[(options["profile"] == n) & (options["case"] == case)].set_index(
                "size_bytes"
            )
            rows.append([n, case] + [_pct(sel.loc[s, "mean"]) for s in sizes])
    add(_table(["profile", "case"] + [_size(s) for s in sizes], rows))
    add("\n" + _options_findings(options, sizes) + "\n")

    # -- discussion
    add("## Discussion\n")
    e = {
        (n, nf, s): _at(curves, n, nf, "published", s)["mean"]
        for n in PROFILES
        for nf in (1, 2)
        for s in NOTE_SIZES
    }
    small, mid, big = NOTE_SIZES
    lower = {s: e[("4G", 1, s)] < e[("3.5G", 1, s)] for s in NOTE_SIZES}
    add(" ".join(v.sentence() for v in vs.values()) + "\n")
    add(
        f"For a single flow, 4G is {'less' if lower[mid] else 'more'} efficient than 3.5G at {_size(mid)} "
        f"({_pct(e[('4G', 1, mid)])} against {_pct(e[('3.5G', 1, mid)])}) and {'less' if lower[big] else 'more'} at "
        f"{_size(big)} ({_pct(e[('4G', 1, big)])} against {_pct(e[('3.5G', 1, big)])})"
        + (
            f": its bandwidth-delay product is {bdp['4G'] / bdp['3.5G']:.1f} times 3.5G's, so a flow spends more "
            "rounds in slow start below the capacity, and the faster link makes those idle rounds weigh more "
            "against the short ideal transfer time"
            if lower[mid] and lower[big] and bdp["4G"] > bdp["3.5G"]
            else ""
        )
        + f". At {_size(small)}: {_pct(e[('3.5G', 1, small)])} for 3.5G, {_pct(e[('4G', 1, small)])} for 4G.\n"
    )
    d35 = {s: e[("3.5G", 2, s)] - e[("3.5G", 1, s)] for s in NOTE_SIZES}
    d4 = {s: e[("4G", 2, s)] - e[("4G", 1, s)] for s in NOTE_SIZES}
    ahead = [s for s in NOTE_SIZES if e[("4G", 2, s)] > e[("3.5G", 2, s)]]
    add(
        f"With one background flow 3.5G's efficiency {'falls' if d35[mid] < 0 else 'rises'} "
        f"({_size(small)}: {_pct(e[('3.5G', 1, small)])} → {_pct(e[('3.5G', 2, small)])}; {_size(mid)}: "
        f"{_pct(e[('3.5G', 1, mid)])} → {_pct(e[('3.5G', 2, mid)])})"
        + (
            ": the loaded buffer multiplies the RTT a new flow sees while the ideal protocol is charged the "
            "unloaded RTT"
            if d35[mid] < 0
            else ""
        )
        + f". 4G's {'rises' if d4[mid] > 0 else 'falls'} for mid-sized flows ({_size(mid)}: "
        f"{_pct(e[('4G', 1, mid)])} → {_pct(e[('4G', 2, mid)])}; {_size(big)}: {_pct(e[('4G', 1, big)])} → "
        f"{_pct(e[('4G', 2, big)])})"
        + (
            ": the flow's share C/2 halves the bandwidth-delay product it has to fill"
            if d4[mid] > 0
            else ""
        )
        + ". With the background flow 4G is "
        + (
            f"ahead of 3.5G at {', '.join(_size(s) for s in ahead)}"
            if ahead
            else "behind 3.5G at every quoted size"
        )
        + "; the study's findings above do not separate this case, so latlab gives the numbers without a verdict. "
        "How far this holds depends on the per-user buffer assumptions above; the loaded check above gives the "
        "packet simulator's completion times against the lossless model under load.\n"
    )
    gap = {
        (n, size): abs(
            _at(curves, n, 1, "published", size)["mean"] - _at(curves, n, 1, "exact", size)["mean"]
        )
        for n in PROFILES
        for size in NOTE_SIZES
    }
    widest = max(gap, key=lambda k: gap[k])
    add(
        f"Among the quoted sizes the published formula and the exact model are furthest apart for {widest[0]} at "
        f"{_size(widest[1])} ({100 * gap[widest]:.1f} points); the packet simulator is within {worst_dev:.2f} segment times of the "
        "exact model.\n"
    )

    # -- closing note
    add("## Closing note: efficiency at 10 KB, 100 KB and 1 MB\n")
    rows = []
    for n in PROFILES:
        for nf in (1, 2):
            cells = [n, "single flow" if nf == 1 else "1 background flow"]
            for s in NOTE_SIZES:
                pub, ex = _at(curves, n, nf, "published", s), _at(curves, n, nf, "exact", s)
                cells.append(f"{_pct(pub['mean'])} / {_pct(ex['mean'])}")
            rows.append(cells)
    add(
        "Mean protocol efficiency, study's published formula / exact model (IW 10, MSS 1448 B, "
        f"{settings.n_samples:,} draws):\n"
    )
    add(_table(["profile", "traffic"] + [_size(s) for s in NOTE_SIZES], rows))
    add("")
    add("## Reproduce\n")
    add(
        "```sh\nlatlab reproduce efficiency            # full (a few minutes); --quick for a smaller run\n"
        "latlab model efficiency --profile 4G --variant published      # the model on its own\n"
        "latlab model efficiency --samples my.csv --iw 30 --tfo         # your own measurements\n```\n"
    )
    add(
        f"The reproduction writes its data next to the report (the copy under docs/ keeps only the report and "
        f"figures): efficiency.parquet (the curves), options.parquet, crosscheck.parquet, loaded_check.parquet, "
        f"loaded_rtt_samples.parquet, loaded_rtt_runs.parquet, and profiles/*-loaded.toml. Seeds are fixed "
        f"(seed {SEED}); the same run gives the same numbers. Code: latlab.models.latency (formulas), "
        f"latlab.models.profiles, latlab.models.montecarlo, {loaded_rtt.__name__}, latlab.models.simcheck and "
        f"latlab.studies.efficiency (cases, metrics, references, verdicts, report, figures).\n"
    )
    return "\n".join(out)
