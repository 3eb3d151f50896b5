"""Short-flow protocol efficiency in 3.5G and 4G networks (specs/studies.md §1).

The study (Garcia, Alfredsson and Brunstrom, WiOpt 2014) modelled the
completion time of short TCP flows, drove the model with throughput and RTT
distributions measured in 3.5G (HSPA+) and 4G (LTE) networks in a
Monte-Carlo simulation, and found that 4G's better latency and throughput
nevertheless give lower protocol efficiency, for a single flow and with one
concurrent background flow.

``reproduce`` does five things and writes a Markdown report about them:

1. simulates the loaded handshake RTT (one background flow) for each profile
   (:mod:`latlab.models.loaded_rtt`) and writes it as a profile variant;
2. runs the Monte-Carlo (:mod:`latlab.models.montecarlo`): efficiency versus
   flow size on a log grid 1 KB – 10 MB, mean and 5/50/95 percentiles, per
   profile, single flow and with one background flow, for the study's
   published formula and the exact model: the study's two figures;
3. tabulates the options the study did not have (TFO, larger IW, delayed ACKs)
   and the sensitivity to the capacity rule;
4. cross-checks the exact model against finite flows in the packet simulator
   over a lossless link (:mod:`latlab.models.simcheck`), also with delayed ACKs;
5. measures how far the lossless model is from flows that start while a
   background flow fills the buffer.

Simulations go through :func:`run_scenarios`, which hands them to latlab's
sweep runner (:mod:`latlab.sweep`): every core by default, and the runs are
kept under ``OUTDIR/runs/`` so an interrupted reproduction resumes.
"""

from __future__ import annotations

import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from latlab.studies._markdown import table as _table

NAME = "efficiency"
DESCRIPTION = "Short-flow TCP protocol efficiency in 3.5G vs 4G: latency model, Monte-Carlo, simulator cross-check"

PROFILES = ("3.5G", "4G")
#: Flow sizes (bytes) the closing note quotes; 320 KiB is the study's reference short flow.
NOTE_SIZES = (10_000, 100_000, 1_000_000)
REFERENCE_SIZE = 320 * 1024
SEED = 1


@dataclass(frozen=True)
class Settings:
    """How much work a reproduction does (full or --quick)."""

    per_decade: int  # Monte-Carlo size grid
    n_samples: int  # Monte-Carlo draws
    loaded_runs: int  # simulated bottlenecks per profile for the loaded RTT
    loaded_probes: int  # probe flows per run
    loaded_duration_s: float
    check_per_decade: int  # lossless cross-check grid
    loaded_check_seeds: int  # start-time replicates of the loaded-buffer check
    loaded_check_per_decade: int


FULL = Settings(per_decade=10, n_samples=1_000_000, loaded_runs=12, loaded_probes=400, loaded_duration_s=70.0,
                check_per_decade=10, loaded_check_seeds=8, loaded_check_per_decade=5)  # fmt: skip
QUICK = Settings(per_decade=4, n_samples=100_000, loaded_runs=3, loaded_probes=200, loaded_duration_s=40.0,
                 check_per_decade=4, loaded_check_seeds=2, loaded_check_per_decade=2)  # fmt: skip


# ----- running simulations -------------------------------------------------


def run_scenarios(scenarios: Sequence[dict[str, Any]], jobs: int | None = None,
                  rundir: Path | None = None) -> list[pd.DataFrame]:  # fmt: skip
    """Run scenarios (dicts) on latlab's sweep runner; return their flows tables, in order.

    ``jobs`` worker processes (default: all cores). With ``rundir`` the runs
    are kept there, so an interrupted reproduction resumes where it stopped;
    without, they go to a temporary folder.
    """
    from latlab.sweep import run_all

    scenarios = list(scenarios)
    if not scenarios:
        return []
    if rundir is not None:
        return [r.flows for r in run_all(scenarios, rundir, jobs=jobs, progress=False)]
    with tempfile.TemporaryDirectory(prefix="latlab-efficiency-") as tmp:
        return [r.flows for r in run_all(scenarios, tmp, jobs=jobs, progress=False)]


# ----- the stages ------------------------------------------------------------


def simulate_loaded_rtt(settings: Settings, jobs: int | None, outdir: Path) -> dict[str, Any]:
    """Stage 1: the loaded-RTT distribution of each profile, written as ``profiles/<name>-loaded.toml``."""
    from latlab.models import loaded_rtt, profiles

    out: dict[str, Any] = {"profiles": {}, "samples": {}, "runs": []}
    plans = {name: loaded_rtt.plan(profiles.load(name), settings.loaded_runs, seed=SEED, probes=settings.loaded_probes,
                                   duration_s=settings.loaded_duration_s) for name in PROFILES}  # fmt: skip
    everything = [r for name in PROFILES for r in plans[name]]
    tables = iter(run_scenarios([loaded_rtt.scenario(r) for r in everything], jobs, outdir / "runs" / "loaded-rtt"))
    for name in PROFILES:
        base = profiles.load(name)
        runs = plans[name]
        samples, summary = loaded_rtt.simulate(runs, run_many=lambda scs: [next(tables) for _ in scs])
        text = loaded_rtt.variant_toml(base, samples, summary)
        path = outdir / "profiles" / f"{name}{profiles.LOADED_SUFFIX}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        info = dict(tomllib.loads(text)["simulation"])
        out["profiles"][name] = base.with_(loaded_rtt_ms=loaded_rtt.distribution(samples), loaded_info=info)
        out["samples"][name] = samples
        out["runs"].append(summary.assign(profile=name))
    out["runs"] = pd.concat(out["runs"], ignore_index=True)
    return out


def monte_carlo(loaded_profiles: dict[str, Any], settings: Settings) -> pd.DataFrame:
    """Stage 2: efficiency vs size per profile, single flow and one background flow, both formula variants."""
    from latlab.models import montecarlo

    grid = montecarlo.size_grid(per_decade=settings.per_decade)
    grid = np.union1d(grid, [REFERENCE_SIZE])
    frames = []
    for name in PROFILES:
        prof = loaded_profiles[name]
        for n_flows in (1, 2):
            for variant in ("published", "exact"):
                df = montecarlo.efficiency_vs_size(prof, grid, n_flows=n_flows, n_samples=settings.n_samples,
                                                   options=montecarlo.ModelOptions(variant=variant), seed=SEED)  # fmt: skip
                frames.append(df.assign(profile=name, n_flows=n_flows, variant=variant))
    return pd.concat(frames, ignore_index=True)


def options_table(loaded_profiles: dict[str, Any], settings: Settings) -> pd.DataFrame:
    """Stage 3: mean efficiency at a few sizes under options the study did not have (single flow, exact model)."""
    from latlab.models import latency, montecarlo

    sizes = list(NOTE_SIZES) + [REFERENCE_SIZE]
    cases: list[tuple[str, Any, dict[str, Any]]] = [
        ("exact model, IW 10 (baseline)", montecarlo.ModelOptions(), {}),
        ("published formula, IW 10", montecarlo.ModelOptions(variant="published"), {}),
        ("IW 4 (RFC 3390)", montecarlo.ModelOptions(iw=4), {}),
        ("IW 30", montecarlo.ModelOptions(iw=30), {}),
        ("IW 100", montecarlo.ModelOptions(iw=100), {}),
        ("TCP Fast Open, IW 10", montecarlo.ModelOptions(tfo=True), {}),
        ("TFO + IW 30", montecarlo.ModelOptions(tfo=True, iw=30), {}),
        ("delayed ACK (2 segments, 40 ms)", montecarlo.ModelOptions(delayed_ack=latency.DelayedAck()), {}),
        ("C drawn from the whole throughput distribution", montecarlo.ModelOptions(), {"capacity": "sampled"}),
    ]
    rows = []
    n = min(settings.n_samples, 200_000)
    for name in PROFILES:
        base = loaded_profiles[name]
        for label, options, changes in cases:
            prof = base.with_(**changes) if changes else base
            df = montecarlo.efficiency_vs_size(prof, sizes, n_samples=n, options=options, seed=SEED)
            for _, row in df.iterrows():
                rows.append({"profile": name, "case": label, "size_bytes": int(row["size_bytes"]), "mean": row["mean"],
                             "p50": row["p50"]})  # fmt: skip
    return pd.DataFrame(rows)


def lossless_check(loaded_profiles: dict[str, Any], settings: Settings, jobs: int | None,
                   rundir: Path | None = None) -> pd.DataFrame:  # fmt: skip
    """Stage 4: finite flows over a lossless link vs the model, with and without delayed ACKs."""
    from latlab.models import latency, montecarlo, simcheck

    grid = montecarlo.size_grid(per_decade=settings.check_per_decade)
    specs = [(name, dack) for name in PROFILES for dack in (False, True)]
    typical = {name: loaded_profiles[name].typical() for name in PROFILES}
    scenarios = [simcheck.lossless_scenario(grid, *typical[name], delayed_ack=dack,
                                            name=f"fct-{name}-{'delack' if dack else 'plain'}")
                 for name, dack in specs]  # fmt: skip
    frames = []
    for (name, dack), flows in zip(specs, run_scenarios(scenarios, jobs, rundir)):
        c, r = typical[name]
        ct = simcheck.completion_times(flows)
        sizes = ct["size_bytes"].to_numpy()
        frames.append(pd.DataFrame({
            "profile": name, "delayed_ack": dack, "capacity_bps": c, "rtt_s": r, "size_bytes": sizes,
            "sim_s": ct["fct_s"].to_numpy(), "retransmitted_segments": ct["retransmitted_segments"].to_numpy(),
            "exact_s": simcheck.model_fct_s(sizes, c, r),
            "published_s": simcheck.model_fct_s(sizes, c, r, variant="published"),
            "delack_model_s": simcheck.model_fct_s(sizes, c, r, delayed_ack=latency.DelayedAck()),
            "tolerance_s": simcheck.tolerance_s(c),
        }))  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def loaded_check(loaded: dict[str, Any], settings: Settings, jobs: int | None,
                 rundir: Path | None = None) -> pd.DataFrame:  # fmt: skip
    """Stage 5: flows that start while a background flow loads the buffer, vs the lossless model."""
    from latlab.models import montecarlo, simcheck

    grid = montecarlo.size_grid(per_decade=settings.loaded_check_per_decade)
    specs = [(name, seed) for name in PROFILES for seed in range(1, settings.loaded_check_seeds + 1)]
    typical = {name: loaded["profiles"][name].typical() for name in PROFILES}
    scenarios = [simcheck.loaded_scenario(grid, *typical[name], loaded["profiles"][name].buffer_bytes, seed=seed,
                                          name=f"fct-loaded-{name}-{seed}")
                 for name, seed in specs]  # fmt: skip
    frames = []
    model_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in PROFILES:
        c, r = typical[name]
        r_s = loaded["samples"][name]
        # The model per size: median over the simulated loaded-RTT samples, at half the capacity.
        per_sample = np.stack([simcheck.model_fct_s(s, c / 2, r_s) for s in grid])
        model_cache[name] = (np.median(per_sample, axis=1), simcheck.model_fct_s(grid, c, r))
    for (name, seed), flows in zip(specs, run_scenarios(scenarios, jobs, rundir)):
        ct = simcheck.completion_times(flows)
        m_loaded, m_single = model_cache[name]
        lookup = dict(zip(grid.tolist(), range(len(grid))))
        idx = [lookup[int(s)] for s in ct["size_bytes"]]
        frames.append(ct.assign(profile=name, seed=seed, model_loaded_s=m_loaded[idx], model_unloaded_s=m_single[idx]))
    return pd.concat(frames, ignore_index=True)


# ----- the reproduction ------------------------------------------------------


def reproduce(outdir: Path, quick: bool = False, jobs: int | None = None) -> Path:
    """Run the whole study into ``outdir``: Parquet data, PNG figures, profile variants and report.md."""
    from latlab import frames as frames_mod
    from latlab._atomic import write_text
    from latlab.models import profiles
    from latlab.studies import _efficiency_figures as figs

    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    settings = QUICK if quick else FULL

    loaded = simulate_loaded_rtt(settings, jobs, outdir)
    curves = monte_carlo(loaded["profiles"], settings)
    options = options_table(loaded["profiles"], settings)
    check = lossless_check(loaded["profiles"], settings, jobs, outdir / "runs" / "lossless-check")
    lcheck = loaded_check(loaded, settings, jobs, outdir / "runs" / "loaded-check")

    samples = pd.concat([pd.DataFrame({"profile": k, "rtt_s": v}) for k, v in loaded["samples"].items()], ignore_index=True)
    for table, name in ((curves, "efficiency"), (options, "options"), (check, "crosscheck"), (lcheck, "loaded_check"),
                        (samples, "loaded_rtt_samples"), (loaded["runs"], "loaded_rtt_runs")):  # fmt: skip
        frames_mod.write_parquet(table, outdir / f"{name}.parquet")

    rng = np.random.default_rng(SEED)
    unloaded = {name: profiles.load(name).rtt_ms.sample(20_000, rng) / 1e3 for name in PROFILES}
    names = list(PROFILES)
    figs.study_figure(curves, names, 1, outdir / "fig_efficiency_single.png")
    figs.study_figure(curves, names, 2, outdir / "fig_efficiency_background.png")
    figs.crosscheck_figure(check, names, outdir / "fig_crosscheck.png")
    figs.accuracy_figure(check, lcheck, names, outdir / "fig_accuracy.png")
    figs.loaded_rtt_figure(unloaded, loaded["samples"], outdir / "fig_loaded_rtt.png")

    report = outdir / "report.md"
    write_text(report, _report(settings, quick, loaded, curves, options, check, lcheck))
    return report


# ----- the report ------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _size(n: float) -> str:
    from latlab.models.efficiency_plot import size_label

    return "320 KiB" if n == REFERENCE_SIZE else size_label(n)


def _at(curves: pd.DataFrame, profile: str, n_flows: int, variant: str, size: int) -> pd.Series:
    sel = curves[(curves["profile"] == profile) & (curves["n_flows"] == n_flows) & (curves["variant"] == variant)]
    return sel.iloc[int(np.argmin(np.abs(sel["size_bytes"].to_numpy() - size)))]


def _report(settings: Settings, quick: bool, loaded: dict[str, Any], curves: pd.DataFrame, options: pd.DataFrame,
            check: pd.DataFrame, lcheck: pd.DataFrame) -> str:  # fmt: skip
    from latlab.models import loaded_rtt, profiles

    profs = loaded["profiles"]
    base = {n: profiles.load(n) for n in PROFILES}
    out: list[str] = []
    add = out.append
    add("# Short-flow protocol efficiency in 3.5G and 4G networks\n")
    add("Reproduction of the cellular efficiency study (J. Garcia, S. Alfredsson, A. Brunstrom, *A Measurement Based "
        "Study of TCP Protocol Efficiency in Cellular Networks*, WiOpt 2014; latlab's specs/studies.md §1 and "
        "specs/latency-model.md). "
        + ("**Quick run** (`--quick`): fewer draws, a coarser grid and fewer simulations than the full "
           "reproduction; the qualitative picture is the same.\n" if quick else
           "Full run: `latlab reproduce efficiency` (a few minutes).\n"))
    add("**The study's finding, the reference point:** short TCP flows use the capacity of 3.5G (HSPA+) and 4G (LTE) "
        "links poorly, and 4G's better latency and throughput nevertheless give *lower* protocol efficiency than "
        "3.5G; with one background flow the 3.5G handshake RTT shifts right and widens (a bloated per-user buffer) "
        "while 4G's barely changes. The study's figures are plots only; no efficiency numbers are quoted from it, "
        "so the comparison below is qualitative.\n")

    # -- inputs
    add("## Inputs\n")
    add("Protocol efficiency E = L_O / L_S: the ideal time L_O = R + O/C (one RTT of set-up, then the full capacity "
        "at once) over the completion time L_S of a TCP flow of O bits (handshake included), both for the same "
        "capacity C and RTT R. With one background flow (N = 2 flows) the new flow gets C/2 and sees the loaded RTT "
        "R_S, the ideal gets C/2 at once with the unloaded R_O: L_O = R_O + 2·O/C. (The spec writes the ideal as "
        "R_O + (O/C)/N; latlab reads it as the time at the flow's fair share, O/(C/N), since sharing cannot make a "
        "transfer faster.)\n")
    rows = []
    for n in ("3G",) + PROFILES:
        p = profiles.load(n)
        rows.append([n, p.throughput_kbps.describe(), p.rtt_ms.describe(), p.capacity_description()])
    add("Network profiles (`latlab/data/profiles/*.toml`), the study's Table I (kbit/s and ms):\n")
    add(_table(["profile", "TCP downlink throughput (kbit/s)", "handshake RTT (ms)", "capacity C in the model"], rows))
    add("\n* **C.** The downlink throughput percentiles mix short and long flows; the 95th percentile stands for the "
        "long-flow throughput, which the study used as the capacity C. The built-in profiles therefore fix C at the "
        "95th percentile; the options table below shows the effect of drawing C from the whole distribution instead.")
    add("* **Interpolation.** Between two given percentiles log(value) is linear in the normal score Φ⁻¹(p) (a "
        "log-normal through the two points); beyond the outermost percentiles the value is held (no invented tails). "
        "A draw is z ~ N(0, 1) through that quantile function; C and R are drawn independently.")
    add("* **Units.** Measured throughput is goodput, so the Monte-Carlo runs in payload units: S = 1448 B "
        "(MSS with timestamps), O = flow size, IW 10 (the study's settings). Sizes are decimal (1 KB = 1000 B).")
    add(f"* **Draws.** {settings.n_samples:,} draws per profile and case, the same draws for every flow size; "
        f"{settings.per_decade} sizes per decade from 1 KB to 10 MB, plus the study's 320 KiB reference flow.\n")

    add("### The loaded RTT (one background flow), from latlab's simulator\n")
    add("The study measured the handshake RTT of new flows while a background flow ran, but printed no numbers. "
        "latlab simulates it (`latlab.models.loaded_rtt`): one per-user bottleneck link of rate C and one-way delay "
        "R_O/2 (R_O from a stratum of the unloaded RTT distribution), a DropTail buffer, one long CUBIC flow (linux "
        "preset) from time 0, and one-segment probe flows (delayed ACK off) at uniformly random times after a 10 s "
        "warm-up; each probe's handshake RTT is one sample.\n")
    add("**Buffer assumptions.** The study attributes the loaded 3.5G RTT to a bloated shared per-user buffer, and "
        "saw 4G barely change:\n")
    rows = []
    for n in PROFILES:
        c, _ = profs[n].typical()
        b = profs[n].buffer_bytes or 0
        rows.append([n, f"{b / 1000:.0f} kB ({b / 1500:.0f} full packets)", f"{b * 8 / c * 1e3:.0f} ms at C"])
    add(_table(["profile", "per-user buffer", "queueing delay when full"], rows))
    add("\n3.5G: 400 kB sits in the several-hundred-kilobyte range reported for HSPA per-user (RLC/RNC) queues; 4G: "
        "64 kB, a short standing queue, as LTE per-bearer queues with discard timers keep it. Both are assumptions; "
        "they are stored in the profile files (`[bottleneck] buffer_bytes`) and can be changed there.\n")
    rows = []
    for n in PROFILES:
        s = loaded["samples"][n] * 1e3
        unl = base[n].rtt_ms
        runs = loaded["runs"][loaded["runs"]["profile"] == n]
        rows.append([n, f"{float(unl.quantile(0.05)[0]):.0f} / {float(unl.quantile(0.5)[0]):.0f} / "
                        f"{float(unl.quantile(0.95)[0]):.0f}",
                     " / ".join(f"{v:.0f}" for v in np.percentile(s, [5, 50, 95])),
                     f"{len(runs)} runs, {s.size} probes ({int(runs['excluded'].sum())} left out)",
                     f"{runs['background_goodput_bps'].mean() / 1e6:.1f} Mbit/s"])  # fmt: skip
    add(_table(["profile", "unloaded RTT p5/p50/p95 (ms)", "loaded RTT p5/p50/p95 (ms)", "samples",
                "background flow goodput"], rows))  # fmt: skip
    add("\n![loaded RTT](fig_loaded_rtt.png)\n")
    add(f"As in the study, the 3.5G RTT shifts right and widens while 4G's barely moves. The distributions are "
        f"written as profile variants (`profiles/<name>{profiles.LOADED_SUFFIX}.toml` in the output folder; the files "
        f"shipped in `latlab/data/profiles/` come from the full run). Probes that lost a packet, timed out or took longer "
        f"than the initial RTO are left out (method: {loaded['runs']['method'].iloc[0]}).\n")

    # -- the study's figures
    add("## The study's figures, as latlab computes them\n")
    add("Solid lines: mean efficiency with the study's published formula; shaded: 5–95 % of the draws; dashed: "
        "median. Dotted: the mean with latlab's exact model.\n")
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
    add(_table(["profile", "traffic", "formula"] + [_size(s) for s in list(NOTE_SIZES) + [REFERENCE_SIZE]], rows))
    add("")
    lo = {}
    for n in PROFILES:
        sel = curves[(curves["profile"] == n) & (curves["n_flows"] == 1) & (curves["variant"] == "published")]
        i = int(np.argmin(sel["mean"].to_numpy()))
        lo[n] = (sel["size_bytes"].iloc[i], sel["mean"].iloc[i])
    add("The minimum of the mean efficiency (published formula, single flow) lies at "
        + ", ".join(f"{_size(lo[n][0])} for {n} ({_pct(lo[n][1])})" for n in PROFILES)
        + ": flows of that size spend most rounds idle in slow start, waiting for ACKs while the window is below "
          "the bandwidth-delay product. 4G's larger bandwidth-delay product (C·R ≈ "
        + ", ".join(f"{profs[n].typical()[0] * profs[n].typical()[1] / 8e3:.0f} kB for {n}" for n in PROFILES)
        + ") costs more idle rounds, which is the study's finding: 4G is less efficient for flows from tens of "
          "kilobytes up.\n")

    # -- cross-check
    add("## Cross-check: the exact model against the packet simulator\n")
    plain = check[~check["delayed_ack"]]
    add("Finite flows over a lossless link in latlab's packet simulator: a custom two-node topology per flow size "
        "(link rate C, delay R/2 each way, a buffer that never fills), \"linux\" preset (MSS 1448 B + 52 B of "
        "headers, timestamps), IW 10, delayed ACK off, NewReno (plain slow start; nothing is lost), one flow per "
        "size, all sizes in one run. The model is evaluated in wire units: C = link rate, S = 1500 B, O = payload "
        "plus 52 B per segment (the last segment counted at its real length). Tolerance: one segment time S/C.\n")
    rows = []
    for n in PROFILES:
        d = plain[plain["profile"] == n]
        dev = (d["sim_s"] - d["exact_s"]) / d["tolerance_s"]
        pub = d["published_s"] / d["sim_s"] - 1
        k1 = d[d["size_bytes"] <= 10 * 1448]
        rows.append([n, f"{d['capacity_bps'].iloc[0] / 1e6:.4g} Mbit/s, {d['rtt_s'].iloc[0] * 1e3:.3g} ms",
                     f"{d['tolerance_s'].iloc[0] * 1e3:.3f} ms", len(d),
                     f"{np.abs(dev).max():.3f} S/C", "yes" if bool((np.abs(dev) <= 1).all()) else "**no**",
                     f"+{1e3 * (k1['published_s'] - k1['sim_s']).mean():.1f} ms (+{_pct((k1['published_s'] / k1['sim_s'] - 1).mean())})",
                     f"{_pct(pub.max())} at {_size(d['size_bytes'].iloc[int(np.argmax(pub.to_numpy()))])}",
                     f"{_pct(pub.abs().median())}"])  # fmt: skip
    add(_table(["profile", "C, R", "S/C", "sizes", "max abs(sim − exact)", "within S/C",
                "published − sim, flows within IW", "published, largest error", "published, median abs error"],
               rows))  # fmt: skip
    add("\n![cross-check](fig_crosscheck.png)\n")
    k1_over = [float((d["published_s"] / d["sim_s"] - 1)[d["size_bytes"] <= 10 * 1448].mean())
               for d in (plain[plain["profile"] == n] for n in PROFILES)]
    same_from = []
    for n in PROFILES:
        d = plain[plain["profile"] == n].sort_values("size_bytes")
        differs = np.abs(d["published_s"].to_numpy() / d["exact_s"].to_numpy() - 1) > 1e-9
        last = int(np.nonzero(differs)[0].max()) if differs.any() else -1
        same_from.append(f"{_size(d['size_bytes'].iloc[last + 1])} for {n}" if last + 1 < len(d) else f"never for {n}")
    add("The exact model and the simulator agree within a fraction of one segment time for every size on the grid "
        "(the remainder is the SYN and ACK serialisation). The published formula departs in two ways: for a flow "
        "that fits in the initial window it adds one idle round, R + S/C − I·S/C (close to one RTT), so it "
        "overestimates the completion time of flows up to ~14 kB by "
        f"{_pct(min(k1_over))}–{_pct(max(k1_over))} (mean per profile); and, with log2(1 + x) instead of "
        "log2 x and an idle round counted after the last window, it charges mid-sized flows one round too many "
        "whenever their last window still leaves the link idle. It coincides with the exact model from "
        + ", ".join(same_from) + " on this grid, where slow start has filled the pipe before the last window.\n")

    # -- accuracy
    add("## What delayed ACKs and a loaded buffer do to the model's accuracy\n")
    rows = []
    for n in PROFILES:
        d = check[(check["profile"] == n) & (check["delayed_ack"])]
        r_exact = d["sim_s"] / d["exact_s"]
        r_dack = d["sim_s"] / d["delack_model_s"]
        ld = lcheck[lcheck["profile"] == n]
        agg = ld.groupby("size_bytes").agg(sim=("fct_s", "median"), ml=("model_loaded_s", "first"),
                                           mu=("model_unloaded_s", "first"),
                                           lossy=("retransmitted_segments", lambda x: (x > 0).mean())).reset_index()  # fmt: skip
        rl, ru = agg["sim"] / agg["ml"], agg["sim"] / agg["mu"]
        rows.append([n, f"{r_exact.min():.2f}–{r_exact.max():.2f}", f"{r_dack.min():.3f}–{r_dack.max():.3f}",
                     f"{rl.min():.2f}–{rl.max():.2f} (median {rl.median():.2f})",
                     f"{ru.min():.2f}–{ru.max():.2f}", _pct(float((ld['retransmitted_segments'] > 0).mean()))])  # fmt: skip
    add(_table(["profile", "delayed ACK: sim / exact model", "delayed ACK: sim / delayed-ACK model",
                "loaded buffer: sim / model (C/2, R_S)", "loaded buffer: sim / single-flow model",
                "loaded: flows with losses"], rows))  # fmt: skip
    add("\n![accuracy](fig_accuracy.png)\n")
    dk = check[check["delayed_ack"]]
    worst_exact = float((dk["sim_s"] / dk["exact_s"]).max())
    worst_dack = float(np.abs(dk["sim_s"] / dk["delack_model_s"] - 1).max())
    add(f"* **Delayed ACKs** (Linux: an ACK every 2 segments, 40 ms timer). Slow start grows by ×1.5 per round "
        f"instead of ×2, and an odd last segment waits for the timer, so the model without delayed ACKs "
        f"underestimates the completion time by up to {_pct(worst_exact - 1)}: one 40 ms timer on a ~100 ms "
        f"transfer for tiny flows with an odd number of segments, slower window growth for mid-sized flows. "
        f"latlab's delayed-ACK variant (window +1 segment per ACK, first ACK of a round after 2 segments, ACK "
        f"pairing followed across rounds) stays within {_pct(worst_dack)} of the simulator on this grid.")
    parts = []
    for n in PROFILES:
        ld = lcheck[lcheck["profile"] == n]
        agg = ld.groupby("size_bytes").agg(sim=("fct_s", "median"), ml=("model_loaded_s", "first")).reset_index()
        ratio = agg["sim"] / agg["ml"]
        small = ratio[agg["size_bytes"] <= 10 * 1448]
        large = ratio[agg["size_bytes"] > 10 * 1448]
        lossy_small = float((ld.loc[ld["size_bytes"] <= 10 * 1448, "retransmitted_segments"] > 0).mean())
        lossy_large = float((ld.loc[ld["size_bytes"] > 10 * 1448, "retransmitted_segments"] > 0).mean())
        rto = float((ld["timeouts"] > 0).mean())
        parts.append(f"{n}: flows within the initial window {small.min():.2f}–{small.max():.2f}× the model "
                     f"({_pct(lossy_small)} of them lost a packet), larger flows {large.min():.2f}–{large.max():.2f}× "
                     f"(median {large.median():.2f}×; {_pct(lossy_large)} lost packets); {_pct(rto)} of all flows "
                     f"waited for a retransmission timeout")
    add(f"* **A loaded buffer.** Each flow starts at a random time after a 10 s warm-up on a bottleneck where a "
        f"CUBIC flow keeps the buffer full ({settings.loaded_check_seeds} start times per size; medians). Against "
        f"the lossless model with the fair share C/2 and the simulated loaded RTT R_S: " + "; ".join(parts) + ". "
        "Flows within the initial window mostly match the model: the RTT inflation is what hurts them, and the "
        "model has it (the few that lose a packet arrived while the background flow had the buffer full). Flows "
        "that keep growing in slow start overflow the full buffer, lose packets and then recover against a CUBIC "
        "flow that holds most of the buffer. The single-flow model (C, R_O) misses by far more, above all in 3.5G. "
        "With a background flow the lossless model is therefore an optimistic bound: it captures the RTT "
        "inflation and the shared capacity, not the losses.\n")

    # -- options
    add("## Options the study did not have\n")
    add("Mean efficiency, single flow, exact model unless stated (TFO: data in the SYN, one RTT less; larger IW: "
        "fewer idle rounds; delayed ACK: slower slow start and ACK timers):\n")
    sizes = list(NOTE_SIZES) + [REFERENCE_SIZE]
    rows = []
    for n in PROFILES:
        for case in dict.fromkeys(options["case"]):
            sel = options[(options["profile"] == n) & (options["case"] == case)].set_index("size_bytes")
            rows.append([n, case] + [_pct(sel.loc[s, "mean"]) for s in sizes])
    add(_table(["profile", "case"] + [_size(s) for s in sizes], rows))
    add("\nTFO lifts small flows the most (a flow within the initial window reaches E = 1); a larger initial window "
        "helps the mid-sized flows where slow start idles; delayed ACKs cost efficiency everywhere below a few "
        "megabytes. Drawing C from the whole throughput distribution (mostly the slow-start-limited short-flow "
        "throughput of the measurement runs) shrinks the bandwidth-delay product and makes both networks look far "
        "more efficient, which is why the long-flow throughput is the right C.\n")

    # -- discussion
    add("## Discussion\n")
    e = {(n, nf, s): _at(curves, n, nf, "published", s)["mean"] for n in PROFILES for nf in (1, 2) for s in NOTE_SIZES}
    add(f"latlab reproduces the study's qualitative result. For a single flow, 4G is less efficient than 3.5G from "
        f"a few tens of kilobytes up (at 100 KB {_pct(e[('4G', 1, 100_000)])} against "
        f"{_pct(e[('3.5G', 1, 100_000)])}, at 1 MB {_pct(e[('4G', 1, 1_000_000)])} against "
        f"{_pct(e[('3.5G', 1, 1_000_000)])}): its bandwidth-delay product is about three times larger, so a flow "
        "spends more rounds in slow start below the capacity, and the faster link makes those idle rounds weigh "
        "more against the short ideal transfer time. Tiny flows are dominated by the set-up round and are about "
        f"equally (in)efficient in both networks (10 KB: {_pct(e[('3.5G', 1, 10_000)])} and "
        f"{_pct(e[('4G', 1, 10_000)])}).\n")
    add(f"With one background flow the two networks move in opposite directions. In 3.5G the bloated buffer "
        f"multiplies the RTT a new flow sees while the ideal protocol is charged the unloaded RTT, so efficiency "
        f"collapses (10 KB: {_pct(e[('3.5G', 1, 10_000)])} → {_pct(e[('3.5G', 2, 10_000)])}; 100 KB: "
        f"{_pct(e[('3.5G', 1, 100_000)])} → {_pct(e[('3.5G', 2, 100_000)])}). In 4G the RTT barely moves and the "
        f"flow's share C/2 halves the bandwidth-delay product it has to fill, so mid-sized flows become *more* "
        f"efficient relative to their share (100 KB: {_pct(e[('4G', 1, 100_000)])} → "
        f"{_pct(e[('4G', 2, 100_000)])}; 1 MB: {_pct(e[('4G', 1, 1_000_000)])} → {_pct(e[('4G', 2, 1_000_000)])}), "
        "and 4G ends up ahead of 3.5G. How far this holds depends on the per-user buffer assumptions above, and "
        "the packet simulations show that under load the model is optimistic in both networks for flows beyond "
        "the initial window (losses in slow start against a full buffer).\n")
    add("The published formula and the exact model differ mostly for small flows (one extra idle round when the "
        "flow fits in the initial window); the packet simulator sides with the exact model to within one segment "
        "time. The lossless model is optimistic once the receiver delays ACKs (use the delayed-ACK variant) and "
        "much more so when the flow has to push into a full buffer, where losses and timeouts dominate.\n")

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
    add("Mean protocol efficiency, study's published formula / exact model (IW 10, MSS 1448 B, "
        f"{settings.n_samples:,} draws):\n")
    add(_table(["profile", "traffic"] + [_size(s) for s in NOTE_SIZES], rows))
    add("")
    add("## Reproduce\n")
    add("```sh\nlatlab reproduce efficiency            # full (a few minutes); --quick for a smaller run\n"
        "latlab model efficiency --profile 4G --variant published      # the model on its own\n"
        "latlab model efficiency --samples my.csv --iw 30 --tfo         # your own measurements\n```\n")
    add(f"The reproduction writes its data next to the report (the copy under docs/ keeps only the report and "
        f"figures): efficiency.parquet (the curves), options.parquet, crosscheck.parquet, loaded_check.parquet, "
        f"loaded_rtt_samples.parquet, loaded_rtt_runs.parquet, and profiles/*-loaded.toml. Seeds are fixed "
        f"(seed {SEED}); the same run gives the same numbers. Code: latlab.models.latency (formulas), "
        f"latlab.models.profiles, latlab.models.montecarlo, {loaded_rtt.__name__}, latlab.models.simcheck and "
        f"latlab.studies.efficiency.\n")
    return "\n".join(out)
