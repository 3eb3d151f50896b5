"""The study's Linux-capable schemes on real Linux TCP, each beside the same scenario simulated.

``latlab reproduce countermeasures --real`` (root) runs this after the
simulated study. A case is one sender (CUBIC, BBR or Reno) through one
bottleneck queue (the path's DropTail, CoDel, FQ-CoDel, PIE; with ECN on and
off for CUBIC) on one of the study's paths, alone, one flow. Its scenario is
the one ``latlab compare`` builds for that scheme alone
(:func:`latlab.compare.translate.scenario_data`), with one flow, the real
part's duration and the path's first seed, written to one file
(``real/<path>/<scheme>/scenario.toml``, trace paths made absolute). That one
file runs twice:

* simulated, by latlab with its own CUBIC, BBR or NewReno (``sim/``);
* emulated in real time (``real/``, :func:`latlab.real.emulated.run_emulated`,
  as ``latlab run --emulate`` does): latlab's emulator forwards the packets
  through the scenario's own links and queue (an LTE user's downlink or a
  Wi-Fi station's runs its whole medium with that member's packets only),
  and the Linux kernel's TCP sends them, the emulator at SCHED_FIFO
  priority 10 as in the RTAC study's real part.

Each run gives one row: the flow's goodput over the measurement window,
p50/p95/p99 of its smoothed RTT sampled every 100 ms (the kernel's
``tcpi_rtt`` for a real flow, as ``run --emulate`` records it; latlab's
srtt for a simulated one: the same statistic on both sides), and at the
path's bottleneck link the drops, the CE marks and the mean queue. A real
row adds how late the emulator forwarded packets (p99), packets the client
namespace's device dropped, the machine's TCP memory and load during the run.

The machine state a real run needs is checked first: the runs wait for TCP
memory to fall below 80 % of its pressure threshold and skip a case with the
reason if it does not (:mod:`latlab.real.tcpmem`); a case run under pressure
runs once more (:func:`latlab.studies._real_runs.measure_case`). A case the
emulator cannot carry (the planner names the key, e.g. ``tcp.ecn`` on a
build whose real flows refuse it) is a row with the reason, not a run.

Rows go to ``real.jsonl`` as they come; a later run into the same folder
with the same settings keeps the rows there and runs only what is missing
(other settings: the old file is kept as ``real.jsonl.prev``).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import tomli_w

from latlab.compare import translate
from latlab.compare.spec import CompareSpec, Scheme
from latlab.studies._real_runs import append_row, load_rows, measure_case, wait_for_tcp_memory
from latlab.studies.countermeasures.cases import PathCase, selected

REAL_JSONL = "real.jsonl"
REAL_DIR = "real"
#: The emulator's SCHED_FIFO priority (the RTAC study's real part uses the same).
REALTIME_PRIORITY = 10
DROPTAIL = "droptail"
AQMS = ("codel", "fq_codel", "pie")


@dataclass(frozen=True)
class RealSettings:
    """What the real part runs: every ``cc`` through every queue, ECN on for ``ecn_ccs`` through the AQMs."""

    duration_s: float = 25.0
    measure_from_s: float = 5.0
    ccs: tuple[str, ...] = ("cubic", "bbr", "reno")
    queues: tuple[str, ...] = (DROPTAIL, *AQMS)
    ecn_ccs: tuple[str, ...] = ("cubic",)
    realtime: int = REALTIME_PRIORITY

    def key(self) -> dict[str, Any]:
        """The settings a row was measured with (a resumed run keeps rows with the same key)."""
        return {"duration_s": self.duration_s, "measure_from_s": self.measure_from_s}


FULL = RealSettings()
#: A few minutes: 10 s runs, DropTail and FQ-CoDel only.
QUICK = RealSettings(duration_s=10.0, measure_from_s=3.0, queues=(DROPTAIL, "fq_codel"))


@dataclass(frozen=True)
class RealCase:
    """One scheme on one path, as run twice (simulated and real)."""

    path: str
    bottleneck_link: str
    spec: CompareSpec
    scheme: Scheme

    @property
    def folder(self) -> Path:
        return Path(REAL_DIR) / self.path / self.scheme.name


def schemes(settings: RealSettings) -> list[Scheme]:
    """``cc+queue`` for every controller and queue, then ``cc+aqm+ecn`` for the ECN controllers."""
    out = [
        Scheme(name=f"{cc}+{q}", cc=cc, queue=None if q == DROPTAIL else {"kind": q})
        for q in settings.queues
        for cc in settings.ccs
    ]
    out += [
        Scheme(name=f"{cc}+{q}+ecn", cc=cc, queue={"kind": q}, ecn=True)
        for q in settings.queues
        if q != DROPTAIL
        for cc in settings.ecn_ccs
    ]
    return out


def cases(
    paths: Sequence[PathCase], settings: RealSettings, keep: Sequence[str], drop: Sequence[str]
) -> list[RealCase]:
    """Every real scheme the filter keeps on every path, with one flow for the settings' duration."""
    out = []
    for p in paths:
        spec = dataclasses.replace(
            p.spec,
            flows=1,
            duration_s=settings.duration_s,
            measure_from_s=settings.measure_from_s,
            seeds=p.spec.seeds[:1],
        )
        out += [
            RealCase(p.name, p.bottleneck_link, spec, s)
            for s in schemes(settings)
            if selected(s.name, keep, drop)
        ]
    return out


def _absolute_traces(data: Any, base: Path) -> Any:
    """``data`` with every relative ``trace`` path resolved against ``base`` (the file moves)."""
    if isinstance(data, dict):
        return {
            k: str((base / v).resolve())
            if k == "trace" and isinstance(v, str) and not os.path.isabs(v)
            else _absolute_traces(v, base)
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [_absolute_traces(v, base) for v in data]
    return data


def write_scenario(case: RealCase, outdir: Path) -> Path:
    """The case's one scenario file, read by the simulated and the real run alike."""
    data = translate.scenario_data(case.spec, case.scheme, case.spec.seeds[0], translate.ALONE)
    data["name"] = f"countermeasures-real-{case.path}-{case.scheme.name}"
    data = _absolute_traces(copy.deepcopy(data), Path(case.spec.path.source).resolve().parent)
    folder = outdir / case.folder
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "scenario.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return path


# ----- one run's row -------------------------------------------------------------


def _bottleneck(results: Any, link: str, measure_from_ns: int) -> dict[str, float | None]:
    """Drops and CE marks (whole run) and the mean queue (KB, measurement window) at ``link``."""
    links = results.links
    row = links[links["name"].astype(str) == link]
    if not len(row):
        return {"drops": None, "marks": None, "queue_kb": None}
    ls = results.link_samples
    ls = ls[
        (ls["link_id"].astype(int) == int(row["link_id"].iloc[0]))
        & (ls["time_ns"] >= measure_from_ns)
    ]
    marks = row["marks_pkts"].iloc[0] if "marks_pkts" in row else 0
    return {
        "drops": float(row["drops_pkts"].iloc[0]),
        "marks": 0.0 if pd.isna(marks) else float(marks),
        "queue_kb": float(ls["queue_bytes"].mean() / 1e3) if len(ls) else None,
    }


def _kernel_ecn(own: pd.DataFrame) -> dict[str, Any]:
    """What a real flow's kernel did with ECN (``run --emulate`` records it): negotiated, and the
    segments acknowledged with ECE (tcpi_delivered_ce). Nothing for a simulated flow."""
    out: dict[str, Any] = {}
    if "ecn" in own:
        out["ecn_negotiated"] = bool(own["ecn"].astype("boolean").fillna(False).all())
    if "delivered_ce" in own:
        out["delivered_ce"] = float(own["delivered_ce"].astype("Float64").fillna(0).sum())
    return out


def measure(results: Any, case: RealCase) -> dict[str, Any]:
    """A run's numbers: the scheme's goodput and sampled srtt percentiles, the bottleneck's counters."""
    from latlab import latency

    flows = results.flows
    own = flows[flows["group"].astype(str) == translate.SCHEME_GROUP]
    ids = set(own["flow_id"].astype(int))
    start_ns = int(round(case.spec.measure_from_s * 1e9))
    fs = results.flow_samples
    fs = fs[fs["flow_id"].astype(int).isin(ids) & (fs["time_ns"] >= start_ns)]
    hist = latency.exact_histogram(fs, "srtt", "srtt_ns")
    p = latency.percentiles_ms(hist)
    retrans = own["retransmitted_segments"].astype("Float64").fillna(0).sum()
    return {
        **_kernel_ecn(own),
        "goodput_mbps": float(own["goodput_bps"].astype(float).sum()) / 1e6,
        **{f"rtt_p{q}_ms": p[q] for q in latency.PERCENTILES},
        "rtt_samples": int(hist["count"].sum()) if len(hist) else 0,
        "retransmitted_segments": float(retrans),
        **_bottleneck(results, case.bottleneck_link, start_ns),
    }


def _row(case: RealCase, mode: str, settings: RealSettings, **fields: Any) -> dict[str, Any]:
    return {
        "path": case.path,
        "scheme": case.scheme.name,
        "cc": case.scheme.cc,
        "queue": case.scheme.queue_kind or DROPTAIL,
        "ecn": case.scheme.ecn,
        "mode": mode,
        **settings.key(),
        **fields,
    }


def run_sim(case: RealCase, scenario: Path, outdir: Path, settings: RealSettings) -> dict:
    import latlab

    started = time.monotonic()
    res = latlab.run(scenario, outdir / case.folder / "sim")
    return _row(
        case, "sim", settings, **measure(res, case), wall_s=round(time.monotonic() - started, 1)
    )


def run_real(case: RealCase, scenario: Path, work: Path, settings: RealSettings) -> dict:
    """One emulated run (the machine's TCP memory and load watched while it lasts)."""
    from latlab.real.emulated import run_emulated
    from latlab.real.hostload import RunWatch

    load_start = os.getloadavg()[0]
    with RunWatch() as watch:
        res = run_emulated(scenario, work, quiet=True, realtime=settings.realtime)
    info = res.run_info
    return _row(
        case,
        "real",
        settings,
        **measure(res, case),
        kernel=info.get("kernel"),
        emulator_timing_p99_us=info.get("emulator_timing_p99_us"),
        client_device_drops=info.get("client_device_drops"),
        notes=info.get("emulation_notes", []),
        wall_s=round(float(info.get("wall_s") or 0.0), 1),
        load_start_1m=round(load_start, 2),
        **watch.record(),
    )


# ----- the real part -------------------------------------------------------------


def unavailable_reason() -> str | None:
    from latlab.real.emulated import unavailable_reason as reason

    return reason()


def _plan_refusal(scenario: Path) -> str | None:
    """Why the emulator cannot carry the scenario (its planner's message), or None."""
    from latlab.errors import ScenarioError
    from latlab.real.emulated import plan
    from latlab.real.netbin import find_binary

    try:
        plan(find_binary(), scenario)
    except ScenarioError as e:
        return str(e).split(": cannot emulate: ", 1)[-1]
    return None


def _kept_rows(jsonl: Path, settings: RealSettings) -> list[dict[str, Any]]:
    """The rows of an earlier run with the same settings; an earlier file of other settings moves aside."""
    if not jsonl.exists():
        return []
    rows = load_rows(jsonl)
    key = settings.key()
    if all(all(r.get(k) == v for k, v in key.items()) for r in rows):
        return rows
    shutil.move(jsonl, jsonl.with_name(REAL_JSONL + ".prev"))
    return []


def latest(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (path, scheme, mode): the last appended (a skipped case run later replaces its row)."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        out.pop((r["path"], r["scheme"], r["mode"]), None)
        out[(r["path"], r["scheme"], r["mode"])] = r
    return list(out.values())


def _done(rows: list[dict], case: RealCase, mode: str) -> bool:
    """Whether ``rows`` hold the case's run in ``mode`` (a skipped case is tried again)."""
    return any(
        r["path"] == case.path
        and r["scheme"] == case.scheme.name
        and r["mode"] == mode
        and not r.get("skipped")
        for r in rows
    )


def _real_case(case: RealCase, scenario: Path, outdir: Path, settings: RealSettings) -> dict:
    """The real row of one case: skipped with the reason if it cannot run or TCP memory is unfit."""
    from latlab.real import tcpmem

    refusal = _plan_refusal(scenario)
    if refusal:
        return _row(case, "real", settings, skipped=f"the emulator cannot carry it: {refusal}")
    wait_for_tcp_memory()
    unfit = tcpmem.unfit_reason()
    if unfit:
        return _row(case, "real", settings, skipped=unfit)
    work = outdir / case.folder / "real"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    return measure_case(lambda w: [run_real(case, scenario, w, settings)], work)[0]


def run_all(
    real_cases: Sequence[RealCase],
    outdir: Path,
    settings: RealSettings,
    on_row: Callable[[dict], None] | None = None,
) -> list[dict[str, Any]]:
    """Every case simulated first (so no simulation loads the machine during a real run), then every case
    real; rows appended to ``real.jsonl`` as they come. Returns every case's latest rows, kept ones
    included."""
    jsonl = outdir / REAL_JSONL
    rows = _kept_rows(jsonl, settings)
    files = [write_scenario(c, outdir) for c in real_cases]
    for mode, run in (("sim", run_sim), ("real", _real_case)):
        for case, scenario in zip(real_cases, files):
            if _done(rows, case, mode):
                continue
            row = run(case, scenario, outdir, settings)
            append_row(jsonl, row)
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return latest(rows)
