"""The countermeasures study: its data, its scheme filter, its CLI errors, and a small run whose
table must hold the runs' own numbers."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from latlab.cli import cli
from latlab.studies import countermeasures
from latlab.studies.countermeasures import cases

SMALL = """\
[paths.tiny]
title = "tiny dumbbell"
about = "two pairs, a 10 Mbit/s core"
seeds = 2
flows = 1
duration_s = 3
measure_from_s = 1
bottleneck_link = "c0->c1"

[paths.tiny.path]
sample_interval_ms = 100
topology = { kind = "edge-dumbbell", edges = 1, hosts_per_edge = 2, access_rate_bps = 100e6, access_delay_ms = 1, edge_rate_bps = 100e6, edge_delay_ms = 2, core_rate_bps = 10e6, core_delay_ms = 5, core_queue = { kind = "droptail", limit_bytes = 30000 } }

[[schemes]]
name = "cubic+droptail"
role = "baseline"
cc = "cubic"

[[schemes]]
name = "vegas"
role = "sender"
cc = "vegas"

[[schemes]]
name = "cubic+red+ecn"
role = "queue"
cc = "cubic"
queue = { kind = "red", limit_packets = 20, min_th = 2, max_th = 10, max_p = 0.2, w_q = 0.02 }
ecn = true

[[schemes]]
name = "cubic+edge-pacer"
role = "edge"
cc = "cubic"
edge_queue = { kind = "edge-pacer", delay_ms = 5, limit_packets = 1000 }
"""


def test_the_study_has_every_scheme_of_issue_31_on_every_path():
    by_path = {c.name: [s.name for s in c.spec.schemes] for c in cases.specs()}
    assert set(by_path) == {"lte", "wifi", "dumbbell"}
    wanted = {
        "cubic+droptail",
        "cubic+rtac",
        "cubic+drwa",
        "vegas",
        "ledbat",
        "bbr",
        *(f"cubic+{q}{e}" for q in ("codel", "fq_codel", "pie") for e in ("", "+ecn")),
    }
    for path, names in by_path.items():
        assert wanted <= set(names), path
        assert ("cubic+edge-pacer" in names) == (path == "dumbbell")


def test_the_scheme_filter_keeps_and_leaves_out():
    assert cases.parse_filter("a*, ~*+ecn") == (("a*",), ("*+ecn",))
    no_ecn = cases.specs("~*+ecn")
    assert all(not s.ecn for c in no_ecn for s in c.spec.schemes)
    assert [c.name for c in cases.specs("cubic+edge-pacer")] == ["dumbbell"]
    with pytest.raises(cases.StudyError, match="'nosuch' matches no scheme"):
        cases.specs("nosuch")
    with pytest.raises(cases.StudyError, match="leaves no scheme"):
        cases.specs("~*")
    with pytest.raises(cases.StudyError, match="expected comma-separated"):
        cases.specs("vegas,,bbr")


def test_an_invalid_scheme_stops_the_study_before_any_run(core, tmp_path, monkeypatch):
    source = tmp_path / "study.toml"
    source.write_text(SMALL.replace('cc = "vegas"', 'cc = "nosuch"'))
    monkeypatch.setattr(cases, "STUDY_TOML", source)
    res = CliRunner().invoke(cli, ["reproduce", "countermeasures", "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "schemes[1].cc" in res.output and "--schemes" in res.output
    assert not (tmp_path / "out" / "tiny").exists()


@pytest.mark.parametrize(
    "args, expected",
    [
        (["countermeasures", "--schemes", "nosuch"], "'nosuch' matches no scheme"),
        (["countermeasures", "--schemes", "~"], "expected comma-separated scheme name patterns"),
        (["efficiency", "--schemes", "vegas"], "the efficiency study has no schemes to choose"),
    ],
)
def test_cli_errors_exit_2(tmp_path, args, expected):
    res = CliRunner().invoke(cli, ["reproduce", *args, "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert expected in res.output
    assert "Traceback" not in res.output


@pytest.fixture(scope="module")
def small_study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cm")
    source = folder / "study.toml"
    source.write_text(SMALL)
    out = folder / "out"
    mp = pytest.MonkeyPatch()
    mp.setattr(cases, "STUDY_TOML", source)
    try:
        report = countermeasures.reproduce(out, jobs=1)
    finally:
        mp.undo()
    return out, report


def test_the_table_holds_the_runs_numbers(core, small_study):
    from latlab.sweep.store import load_run

    out, report = small_study
    results = pd.read_csv(out / "results.csv")
    seeds = pd.read_csv(out / "seeds.csv")
    assert list(results["scheme"]) == [
        "cubic+droptail",
        "vegas",
        "cubic+red+ecn",
        "cubic+edge-pacer",
    ]
    assert results.set_index("scheme").loc["cubic+red+ecn", "bottleneck_marks"] > 0
    for _, r in seeds.iterrows():
        alone = load_run(out / "tiny", r["alone_run"])
        vs = load_run(out / "tiny", r["vs_cubic_run"])
        flows = alone.flows[alone.flows["group"] == "scheme"]
        assert r["goodput_bps"] == pytest.approx(flows["goodput_bps"].sum())
        assert r["goodput_bps"] > 0
        own = vs.flows[vs.flows["group"] == "scheme"]["goodput_bps"].sum()
        total = vs.flows["goodput_bps"].sum()
        assert r["share"] == pytest.approx(own / total)
        core_link = alone.links[alone.links["name"] == "c0->c1"].iloc[0]
        assert r["util"] == pytest.approx(core_link["utilization"])
        assert r["bottleneck_drops"] == core_link["drops_pkts"]
        # the links table has marks only where a queue marks (ECN)
        assert r["bottleneck_marks"] == core_link.get("marks_pkts", 0)
        assert r["recoveries"] == flows["fast_recoveries"].sum() + flows["timeouts"].sum()
    for _, r in results.iterrows():
        mine = seeds[seeds["scheme"] == r["scheme"]]
        assert r["goodput_mean_bps"] == pytest.approx(mine["goodput_bps"].mean())
        assert r["share_mean"] == pytest.approx(mine["share"].mean())
        assert r["cwnd_kb"] == pytest.approx(mine["cwnd_kb"].mean())
        assert not math.isnan(r["rtt_p95_ms"])
    # the edge pacer ran at the edge only in its own scheme's runs
    pacer = seeds[seeds["scheme"] == "cubic+edge-pacer"].iloc[0]
    qdiscs = load_run(out / "tiny", pacer["alone_run"]).links.set_index("name")["qdisc"]
    assert "edge" in str(qdiscs["ie0->c0"]).lower()
    text = Path(report).read_text()
    base = results.iloc[0]
    assert f"{base['goodput_mean_bps'] / 1e6:.2f} Mbit/s" in text
    assert "**Full run**" in text
    assert (out / "fig_share.png").is_file() and (out / "fig_tiny_plane.png").is_file()


def test_a_second_run_reuses_every_finished_run(core, small_study, monkeypatch):
    out, _ = small_study
    monkeypatch.setattr(cases, "STUDY_TOML", out.parent / "study.toml")

    def stamps() -> dict[str, int]:
        return {
            str(p): p.stat().st_mtime_ns for p in (out / "tiny" / "runs").rglob("*") if p.is_file()
        }

    before = stamps()
    assert before
    countermeasures.reproduce(out, jobs=1)
    assert stamps() == before


# ----- the real part (real Linux TCP over the emulated paths) ------------------------------------------------


def test_the_real_part_runs_every_linux_controller_through_every_queue():
    from latlab.studies.countermeasures import real

    names = [s.name for s in real.schemes(real.FULL)]
    for cc in ("cubic", "bbr", "reno"):
        for q in ("droptail", "codel", "fq_codel", "pie"):
            assert f"{cc}+{q}" in names
    assert {n for n in names if n.endswith("+ecn")} == {
        "cubic+codel+ecn",
        "cubic+fq_codel+ecn",
        "cubic+pie+ecn",
    }
    todo = real.cases(cases.specs(), real.FULL, (), ("*+ecn",))
    assert {c.path for c in todo} == {"lte", "wifi", "dumbbell"}
    assert len(todo) == 3 * 12 and all(c.spec.flows == 1 for c in todo)
    assert [c.scheme.name for c in real.cases(cases.specs(), real.QUICK, ("reno*",), ())][:2] == [
        "reno+droptail",
        "reno+fq_codel",
    ]


def test_a_real_case_is_one_scenario_file_the_simulator_and_the_emulator_both_take(core, tmp_path):
    import tomllib

    from latlab.real.emulated import plan
    from latlab.real.netbin import find_binary
    from latlab.scenario import Scenario
    from latlab.studies.countermeasures import real

    todo = real.cases(cases.specs(), real.QUICK, ("*+fq_codel",), ())
    assert {c.path for c in todo} == {"lte", "wifi", "dumbbell"}
    for case in todo:
        path = real.write_scenario(case, tmp_path)
        data = tomllib.loads(path.read_text())
        assert data["duration_s"] == real.QUICK.duration_s and len(data["flows"]) == 1
        assert data["flows"][0]["count"] == 1 and data["flows"][0]["cc"] == case.scheme.cc
        Scenario.from_toml(path).validate()
        the_plan = plan(find_binary(), path)
        assert [f["linux_cc"] for f in the_plan["flows"]] == [case.scheme.cc]
    lte = next(c for c in todo if c.path == "lte")
    text = real.write_scenario(lte, tmp_path).read_text()
    trace = str((Path(real.__file__).parent / "../../data/traces/lte-variable.trace").resolve())
    assert trace in text and Path(trace).is_file()
    assert 'kind = "fq_codel"' in text


def _pair(sim_g, real_g, sim_p95, real_p95, **real_fields):
    base = {"path": "lte", "scheme": "cubic+droptail", "cc": "cubic", "queue": "droptail"}
    base.update(ecn=False, duration_s=25.0, measure_from_s=5.0)
    sim = {**base, "mode": "sim", "goodput_mbps": sim_g, "rtt_p95_ms": sim_p95}
    real_row = {**base, "mode": "real", "goodput_mbps": real_g, "rtt_p95_ms": real_p95}
    return [sim, {**real_row, **real_fields}]


def test_a_real_gap_is_explained_only_by_the_real_runs_own_record():
    from latlab.studies.countermeasures import real_report as R

    close = R.pairs(_pair(10.0, 10.5, 600.0, 650.0))[0]
    assert R.judged(close)["goodput"][0] == "agrees" and R.judged(close)["p95"][0] == "agrees"
    assert "within ±15 % of the simulated in 1" in R.counts_sentence([close])
    far = R.pairs(_pair(10.0, 5.0, 600.0, 650.0))[0]
    assert R.judged(far)["goodput"][0] == "differs"
    text = R.gap_sentence(far, R.judged(far))
    assert "**unexplained**" in text and "5.00 Mbit/s real" in text
    late = R.pairs(_pair(10.0, 5.0, 600.0, 650.0, emulator_timing_p99_us=4000.0))[0]
    text = R.gap_sentence(late, R.judged(late))
    assert "unexplained" not in text and "4.0 ms after its model time" in text
    pressed = R.pairs(_pair(10.0, 10.0, 600.0, 1300.0, tcp_mem_pressure=True))[0]
    assert R.judged(pressed)["p95"][0] == "differs"
    assert "pressure threshold" in R.gap_sentence(pressed, R.judged(pressed))
    skipped = R.pairs(_pair(10.0, None, 600.0, None, skipped="no ECN"))[0]
    assert not R.ran(skipped)
    assert R.summary_sentence(_pair(10.0, 5.0, 600.0, 650.0)).endswith(
        "unexplained gaps beyond the partly bands: 1."
    )


def test_real_runs_are_refused_before_anything_runs_without_root(monkeypatch, tmp_path):
    from latlab.real.emulated import EmulationUnavailable
    from latlab.studies.countermeasures import real

    monkeypatch.setattr(real, "unavailable_reason", lambda: "emulation needs root (test)")
    with pytest.raises(EmulationUnavailable, match="needs root"):
        countermeasures.reproduce(tmp_path / "out", quick=True, real=True)
    assert not (tmp_path / "out").exists()
    res = CliRunner().invoke(
        cli, ["reproduce", "countermeasures", "--quick", "--real", "-o", str(tmp_path / "o2")]
    )
    assert res.exit_code == 2 and "--real: emulation needs root" in res.output, res.output


def _real_unavailable() -> str | None:
    from latlab.real import tcpmem
    from latlab.studies.countermeasures import real

    return real.unavailable_reason() or tcpmem.unfit_reason()


def test_one_real_case_beside_its_simulated_twin(core, tmp_path):
    """A short real run (root and TUN; skipped otherwise): the row holds the run's own numbers."""
    import dataclasses

    from latlab.results import Results
    from latlab.studies.countermeasures import real

    reason = _real_unavailable()
    if reason:
        pytest.skip(f"the real part cannot run here: {reason}")
    settings = dataclasses.replace(real.QUICK, duration_s=4.0, measure_from_s=1.0)
    todo = [
        c
        for c in real.cases(cases.specs(), settings, ("cubic+droptail",), ())
        if c.path == "dumbbell"
    ]
    rows = real.run_all(todo, tmp_path, settings)
    sim, live = (next(r for r in rows if r["mode"] == m) for m in ("sim", "real"))
    assert not live.get("skipped"), live
    res = Results.load(tmp_path / todo[0].folder / "real")
    assert res.run_info["emulated"] is True
    own = res.flows[res.flows["group"] == "scheme"]
    assert live["goodput_mbps"] == pytest.approx(own["goodput_bps"].sum() / 1e6)
    assert live["goodput_mbps"] > 0 and sim["goodput_mbps"] > 0
    assert live["rtt_p95_ms"] >= 100  # the dumbbell's core alone is 50 ms each way
    assert live["load_max_1m"] >= 0 and "tcp_mem_pressure" in live
    # a second run with the same settings keeps both rows and runs nothing
    before = (tmp_path / real.REAL_JSONL).read_text()
    again = real.run_all(todo, tmp_path, settings)
    assert [(r["mode"], r["goodput_mbps"]) for r in again] == [
        (r["mode"], r["goodput_mbps"]) for r in rows
    ]
    assert (tmp_path / real.REAL_JSONL).read_text() == before


def test_ece_counted_by_the_kernel_without_a_counted_mark_is_flagged():
    from latlab.studies.countermeasures import real_report as R

    def rows(marks: float) -> list[dict]:
        out = []
        for scheme, ecn in (("cubic+codel", False), ("cubic+codel+ecn", True)):
            for r in _pair(10.0, 10.0, 80.0, 80.0, drops=5.0, marks=marks if ecn else 0.0):
                extra = (
                    {"ecn_negotiated": True, "delivered_ce": 40.0}
                    if ecn and r["mode"] == "real"
                    else {}
                )
                out.append({**r, "scheme": scheme, "queue": "codel", "ecn": ecn, **extra})
        return out

    assert "**unexplained**" in R.ecn_sentence(R.pairs(rows(0.0)))
    counted = R.ecn_sentence(R.pairs(rows(30.0)))
    assert "30 CE marks" in counted and "unexplained" not in counted
