"""The report's real part: each real run beside its simulated twin, judged by a rule, gaps explained or flagged.

Fixed text here describes the set-up only; every sentence that states a
result is computed from the rows of ``real.jsonl``
(:mod:`.real`). The rules:

* **goodput**: the real flow's within ±:data:`GOODPUT_TOL` of the simulated
  twin's is *within* tolerance, within ±:data:`GOODPUT_PARTLY` *partly*,
  beyond it *apart* (:func:`latlab.studies._verdict.within`, the simulated
  figure as the reference);
* **p95 RTT** (smoothed RTT sampled every 100 ms on both sides): the same with
  ±:data:`P95_TOL` and ±:data:`P95_PARTLY`;
* a case *apart* on either is **explained** only by what the real run
  recorded against itself: the emulator forwarding packets late
  (p99 above :data:`LATE_US`), packets the client namespace's device
  dropped before the emulator read them, or TCP memory pressure during the
  run. Otherwise it is flagged **unexplained**, with both runs' bottleneck
  traces beside it (drops, marks, mean queue, retransmissions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from latlab.studies._markdown import num, table
from latlab.studies._verdict import Reference, within
from latlab.studies.countermeasures.real import AQMS, DROPTAIL, RealSettings

GOODPUT_TOL = 0.15
GOODPUT_PARTLY = 0.30
P95_TOL = 0.25
P95_PARTLY = 0.50
#: The emulator is "late" when its p99 packet is this far behind its model time (µs).
LATE_US = 1000.0
UNEXPLAINED = "**unexplained**"
LABELS = {"agrees": "within", "partly": "partly", "differs": "**apart**"}


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def pairs(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (path, scheme) in run order: its ``sim`` row and its ``real`` row (None if missing)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        entry = out.setdefault((r["path"], r["scheme"]), {"sim": None, "real": None})
        entry[r["mode"]] = r
        entry.update(path=r["path"], scheme=r["scheme"], cc=r["cc"], queue=r["queue"])
        entry["ecn"] = r["ecn"]
    return list(out.values())


def judge(real: Any, sim: Any, tol: float, partly: float, what: str) -> tuple[str, str]:
    """(outcome, rule) of a real figure against its simulated twin's; "differs" if either is missing."""
    if not (_finite(real) and _finite(sim)) or sim == 0:
        return "differs", "no figure on one side"
    outcome, _ = within(float(real), Reference(what, what, value=float(sim)), tol, partly)
    dev = float(real) / float(sim) - 1
    return outcome, f"{100 * dev:+.0f} %; tolerance ±{100 * tol:g} %, partly ±{100 * partly:g} %"


def judged(p: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """A ran pair's goodput and p95 outcomes."""
    sim, real = p["sim"], p["real"]
    return {
        "goodput": judge(
            real["goodput_mbps"], sim["goodput_mbps"], GOODPUT_TOL, GOODPUT_PARTLY, "goodput"
        ),
        "p95": judge(real["rtt_p95_ms"], sim["rtt_p95_ms"], P95_TOL, P95_PARTLY, "p95"),
    }


def ran(p: dict[str, Any]) -> bool:
    return p["sim"] is not None and p["real"] is not None and not p["real"].get("skipped")


def disturbances(real: dict[str, Any]) -> list[str]:
    """What the real run recorded against itself (the machine did not keep up), as phrases."""
    out = []
    late = real.get("emulator_timing_p99_us")
    if _finite(late) and late > LATE_US:
        out.append(
            f"the emulator forwarded its p99 packet {late / 1e3:.1f} ms after its model time "
            "(the machine did not keep up)"
        )
    drops = real.get("client_device_drops")
    if _finite(drops) and drops > 0:
        out.append(f"{drops:.0f} packets were dropped by the client's device before the emulator")
    if real.get("tcp_mem_pressure"):
        out.append("TCP memory passed its pressure threshold during the run")
    return out


def _traces(r: dict[str, Any]) -> str:
    return (
        f"{num(r.get('drops'), '{:.0f}')} drops, {num(r.get('marks'), '{:.0f}')} CE marks, mean "
        f"queue {num(r.get('queue_kb'), '{:.0f}')} KB at the bottleneck, "
        f"{num(r.get('retransmitted_segments'), '{:.0f}')} retransmitted segments"
    )


def gap_sentence(p: dict[str, Any], outcomes: dict[str, tuple[str, str]]) -> str:
    """A case apart on goodput or p95: the gap, then the reason from the run's record or UNEXPLAINED."""
    sim, real = p["sim"], p["real"]
    parts = []
    if outcomes["goodput"][0] == "differs":
        parts.append(
            f"goodput {num(real['goodput_mbps'], '{:.2f}')} Mbit/s real against "
            f"{num(sim['goodput_mbps'], '{:.2f}')} simulated ({outcomes['goodput'][1]})"
        )
    if outcomes["p95"][0] == "differs":
        parts.append(
            f"p95 RTT {num(real['rtt_p95_ms'], '{:.0f}')} ms real against "
            f"{num(sim['rtt_p95_ms'], '{:.0f}')} ms simulated ({outcomes['p95'][1]})"
        )
    what = f"{p['scheme']}: " + "; ".join(parts) + "."
    why = disturbances(real)
    if why:
        return f"{what} The real run's own record explains it: {'; '.join(why)}."
    return (
        f"{what} {UNEXPLAINED}: the real run recorded no disturbance. Traces, real: "
        f"{_traces(real)}; simulated: {_traces(sim)}."
    )


def _pair_row(p: dict[str, Any]) -> list[str]:
    sim, real = p["sim"] or {}, p["real"] or {}
    if not ran(p):
        why = real.get("skipped") or "not run"
        return [p["scheme"], num(sim.get("goodput_mbps"), "{:.2f}"), "–", why] + ["–"] * 8
    o = judged(p)

    def both(key: str, fmt: str) -> str:
        return f"{num(sim.get(key), fmt)} / {num(real.get(key), fmt)}"

    return [
        p["scheme"],
        num(sim["goodput_mbps"], "{:.2f}"),
        num(real["goodput_mbps"], "{:.2f}"),
        f"{LABELS[o['goodput'][0]]} ({_gap(o['goodput'][1])})",
        both("rtt_p50_ms", "{:.0f}"),
        both("rtt_p95_ms", "{:.0f}"),
        f"{LABELS[o['p95'][0]]} ({_gap(o['p95'][1])})",
        both("rtt_p99_ms", "{:.0f}"),
        both("drops", "{:.0f}"),
        both("marks", "{:.0f}"),
        both("queue_kb", "{:.0f}"),
        both("retransmitted_segments", "{:.0f}"),
    ]


def _gap(rule: str) -> str:
    """The deviation alone ("+4 %") of a rule text; the tolerances are in the set-up."""
    return rule.split(";", 1)[0]


HEADER = [
    "case",
    "goodput Mbit/s sim",
    "real",
    "goodput rule",
    "p50 ms sim / real",
    "p95 ms sim / real",
    "p95 rule",
    "p99 ms sim / real",
    "drops sim / real",
    "CE marks sim / real",
    "queue KB sim / real",
    "retransmitted sim / real",
]


def counts_sentence(ps: Sequence[dict[str, Any]]) -> str:
    done = [p for p in ps if ran(p)]
    if not done:
        return "No case ran on real Linux TCP on this path."
    n = {
        k: {o: sum(judged(p)[k][0] == o for p in done) for o in LABELS} for k in ("goodput", "p95")
    }
    return (
        f"Of {len(done)} cases run on both sides, the real goodput is within ±"
        f"{100 * GOODPUT_TOL:g} % of the simulated in {n['goodput']['agrees']}, partly (±"
        f"{100 * GOODPUT_PARTLY:g} %) in {n['goodput']['partly']}, apart in "
        f"{n['goodput']['differs']}; the real p95 RTT within ±{100 * P95_TOL:g} % in "
        f"{n['p95']['agrees']}, partly (±{100 * P95_PARTLY:g} %) in {n['p95']['partly']}, apart "
        f"in {n['p95']['differs']}."
    )


def lowest_sentence(ps: Sequence[dict[str, Any]]) -> str:
    """The case with the lowest p95 RTT, real and simulated."""
    done = [p for p in ps if ran(p) and _finite(p["real"]["rtt_p95_ms"])]
    if not done:
        return ""

    def lowest(mode: str) -> dict[str, Any]:
        return min(done, key=lambda p: (p[mode]["rtt_p95_ms"], p["scheme"]))

    r, s = lowest("real"), lowest("sim")
    return (
        f"Lowest p95 RTT among these cases: real, {r['scheme']} ({num(r['real']['rtt_p95_ms'], '{:.0f}')} ms "
        f"at {num(r['real']['goodput_mbps'], '{:.2f}')} Mbit/s); simulated, {s['scheme']} "
        f"({num(s['sim']['rtt_p95_ms'], '{:.0f}')} ms at {num(s['sim']['goodput_mbps'], '{:.2f}')} Mbit/s)."
    )


def _change(p: dict[str, Any], base: dict[str, Any], mode: str) -> str:
    a, b = p[mode]["rtt_p95_ms"], base[mode]["rtt_p95_ms"]
    return f"{100 * (a / b - 1):+.0f} %" if _finite(a) and _finite(b) and b else "–"


def aqm_sentence(ps: Sequence[dict[str, Any]], cc: str) -> str:
    """Each AQM's p95 against DropTail's, for one controller without ECN, real and simulated."""
    by = {(p["cc"], p["queue"], p["ecn"]): p for p in ps if ran(p)}
    base = by.get((cc, DROPTAIL, False))
    parts = [
        f"{q} {_change(by[(cc, q, False)], base, 'real')} real, "
        f"{_change(by[(cc, q, False)], base, 'sim')} simulated"
        for q in AQMS
        if base is not None and (cc, q, False) in by
    ]
    if not parts:
        return ""
    return f"{cc}'s p95 RTT through each AQM against DropTail's: " + "; ".join(parts) + "."


def _kernel_words(r: dict[str, Any]) -> str:
    """What the real sender's kernel recorded of ECN, when the run has it."""
    if "ecn_negotiated" not in r:
        return ""
    said = "negotiated" if r["ecn_negotiated"] else "did not negotiate"
    out = (
        f"; the kernel {said} ECN and counted {num(r.get('delivered_ce'), '{:.0f}')} segments "
        "acknowledged with ECE"
    )
    if _finite(r.get("delivered_ce")) and r["delivered_ce"] > 0 and r.get("marks") == 0:
        out += (
            f" while the bottleneck's links row counts no CE mark: {UNEXPLAINED} (the marks are "
            "set somewhere the links table does not count)"
        )
    return out


def ecn_sentence(ps: Sequence[dict[str, Any]]) -> str:
    """Each real ECN case beside the same queue dropping: marks, drops, goodput, p95."""
    by = {(p["cc"], p["queue"], p["ecn"]): p for p in ps}
    parts, skipped = [], []
    for (cc, q, ecn), p in by.items():
        if not ecn:
            continue
        plain = by.get((cc, q, False))
        if not ran(p):
            skipped.append(f"{p['scheme']} ({(p['real'] or {}).get('skipped', 'not run')})")
            continue
        if plain is None or not ran(plain):
            continue
        r, r0 = p["real"], plain["real"]
        parts.append(
            f"{p['scheme']}: {num(r['marks'], '{:.0f}')} CE marks and {num(r['drops'], '{:.0f}')} drops at the "
            f"bottleneck (without ECN {num(r0['drops'], '{:.0f}')} drops), "
            f"{num(r['goodput_mbps'], '{:.2f}')} Mbit/s against {num(r0['goodput_mbps'], '{:.2f}')}, "
            f"p95 {num(r['rtt_p95_ms'], '{:.0f}')} ms against {num(r0['rtt_p95_ms'], '{:.0f}')}"
            + _kernel_words(r)
        )
    out = ""
    if parts:
        out = "Real flows with ECN against the same queue dropping: " + "; ".join(parts) + "."
    if skipped:
        out += (" " if out else "") + "Not run with ECN: " + "; ".join(skipped) + "."
    return out


def path_section(title: str, ps: Sequence[dict[str, Any]], ccs: Sequence[str]) -> str:
    lines = [f"### {title}", "", table(HEADER, [_pair_row(p) for p in ps]), ""]
    sentences = [counts_sentence(ps), lowest_sentence(ps)]
    sentences += [aqm_sentence(ps, cc) for cc in ccs]
    sentences.append(ecn_sentence(ps))
    sentences += [gap_sentence(p, judged(p)) for p in ps if ran(p) and _apart(p)]
    lines += [f"* {s}" for s in sentences if s]
    return "\n".join(lines) + "\n"


def _apart(p: dict[str, Any]) -> bool:
    return any(o == "differs" for o, _ in judged(p).values())


def load_range(rows: Sequence[dict[str, Any]]) -> str:
    real = [r for r in rows if r["mode"] == "real" and not r.get("skipped")]
    lows = [r["load_start_1m"] for r in real if _finite(r.get("load_start_1m"))]
    highs = [r["load_max_1m"] for r in real if _finite(r.get("load_max_1m"))]
    if not lows or not highs:
        return "no load recorded"
    return f"a 1-minute load average of {min(lows):.1f}–{max(highs):.1f}"


def summary_sentence(rows: Sequence[dict[str, Any]]) -> str:
    """One line for the report's summary: the cases within tolerance and the unexplained gaps."""
    ps = [p for p in pairs(rows) if ran(p)]
    if not ps:
        return "Real part: no case ran on real Linux TCP."
    g = sum(judged(p)["goodput"][0] == "agrees" for p in ps)
    q = sum(judged(p)["p95"][0] == "agrees" for p in ps)
    unexplained = sum(_apart(p) and not disturbances(p["real"]) for p in ps)
    return (
        f"Real part (real Linux TCP over the emulated paths, beside the same scenarios simulated): of "
        f"{len(ps)} cases, goodput within ±{100 * GOODPUT_TOL:g} % of the simulated in {g}, p95 RTT within "
        f"±{100 * P95_TOL:g} % in {q}; unexplained gaps beyond the partly bands: {unexplained}."
    )


def setup_text(settings: RealSettings, seeds: dict[str, int]) -> str:
    seed_words = ", ".join(f"{p} seed {s}" for p, s in seeds.items())
    return (
        "Each case is one flow of a scheme alone on one of the study's paths, its scenario the one "
        "`latlab compare` builds for the scheme alone, with one flow, "
        f"{settings.duration_s:g} s per run measured over [{settings.measure_from_s:g}, "
        f"{settings.duration_s:g}] s ({seed_words}). That one scenario file runs twice: simulated, with "
        "latlab's CUBIC, BBR and NewReno (`reno`); and emulated in real time as `latlab run --emulate` "
        "does, the emulator forwarding the packets through the path's own links and bottleneck queue "
        f"(SCHED_FIFO priority {settings.realtime}) and the Linux kernel's `cubic`, `bbr` or `reno` "
        "sending them (an LTE user's or a Wi-Fi station's downlink runs its whole medium with that "
        "member's packets only; the dumbbell runs one flow, s0 to d0). The RTT on both sides is the "
        "sender's smoothed RTT sampled every 100 ms over the measurement window (the kernel's "
        "`tcpi_rtt` for a real flow), so p50/p95/p99 compare the same statistic. Drops, CE marks and "
        "the mean queue are the bottleneck link's; retransmitted segments are the flow's. Rules: goodput "
        f"within ±{100 * GOODPUT_TOL:g} % of the simulated (partly ±{100 * GOODPUT_PARTLY:g} %), p95 "
        f"RTT within ±{100 * P95_TOL:g} % (partly ±{100 * P95_PARTLY:g} %), the simulated figure as the "
        "reference. A case apart on either is explained only by what its real run recorded (the "
        f"emulator more than {LATE_US / 1e3:g} ms late at p99, packets dropped before the emulator, TCP "
        "memory pressure) and flagged unexplained otherwise, with both runs' traces beside it."
    )


def render(
    rows: Sequence[dict[str, Any]],
    settings: RealSettings,
    command: str,
    titles: dict[str, str],
    seeds: dict[str, int],
) -> str:
    """The real part's section from its rows (``titles``: path name -> title, in order)."""
    real = [r for r in rows if r["mode"] == "real"]
    wall = sum(float(r.get("wall_s") or 0) for r in real)
    kernels = sorted({str(r["kernel"]) for r in real if r.get("kernel")})
    lines = [
        "## Real Linux TCP beside the simulation",
        "",
        f"**Real part** (`{command}`): {len(real)} cases, "
        f"{sum(1 for r in real if r.get('skipped'))} skipped; kernel "
        f"{', '.join(kernels) or 'unknown'}; the real runs took {wall:.0f} s under {load_range(rows)} "
        "(sampled every 0.2 s during each run, from its start) on the machine's shared cores.",
        "",
        setup_text(settings, seeds),
        "",
    ]
    ps = pairs(rows)
    for name, title in titles.items():
        mine = [p for p in ps if p["path"] == name]
        if mine:
            lines.append(path_section(title, mine, settings.ccs))
    return "\n".join(lines)
