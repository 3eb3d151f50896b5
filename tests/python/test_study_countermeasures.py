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
