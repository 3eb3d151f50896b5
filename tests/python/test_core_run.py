"""run() against the real compiled core: tables, conservation, determinism, built-in scenarios."""

import json
from pathlib import Path

import pytest

import latlab
from conftest import REPO, TINY_TOML
from latlab import builtin, schema

TIMING_KEYS = {"wall_s", "build_s", "events_per_s", "core_wall_s"}


def test_tiny_run_tables(core, tmp_path):
    res = latlab.run(latlab.Scenario.from_toml_str(TINY_TOML, "tiny.toml"))
    for name, columns in schema.TABLES.items():
        missing = set(columns) - set(res.tables[name].columns)
        assert not missing, f"{name} lacks {missing}"
    assert set(schema.CONSERVATION) <= set(res.conservation.columns)
    assert res.conservation_ok, res.conservation_failures()
    assert len(res.flows) == 2 and len(res.flow_samples) > 0 and len(res.link_samples) > 0
    assert (res.flows["bytes_delivered"] > 0).all()
    info = res.run_info
    assert (
        info["events"] > 0
        and info["duration_s"] == 2.0
        and info["seed"] == 3
        and info["wall_s"] > 0
    )


def _run_to(outdir: Path, seed: int | None = None) -> Path:
    latlab.run(latlab.Scenario.from_toml_str(TINY_TOML, "tiny.toml"), outdir=outdir, seed=seed)
    return outdir


def _facts(outdir: Path) -> dict:
    run = json.loads((outdir / "run.json").read_text())["run"]
    return {k: v for k, v in run.items() if k not in TIMING_KEYS}


def test_same_seed_gives_identical_files(core, tmp_path):
    a, b = _run_to(tmp_path / "a"), _run_to(tmp_path / "b")
    parquet = sorted(p.name for p in a.glob("*.parquet"))
    assert parquet == sorted(p.name for p in b.glob("*.parquet")) and parquet
    for name in parquet:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert _facts(a) == _facts(b)
    assert (a / "scenario.toml").read_text() == (b / "scenario.toml").read_text()


def test_different_seed_gives_different_results(core, tmp_path):
    a, c = _run_to(tmp_path / "a", seed=3), _run_to(tmp_path / "c", seed=4)
    assert (a / "flows.parquet").read_bytes() != (c / "flows.parquet").read_bytes()


def test_results_round_trip_with_real_tables(core, tmp_path):
    import pandas as pd

    res = latlab.run(latlab.Scenario.from_toml_str(TINY_TOML), outdir=tmp_path)
    back = latlab.Results.load(tmp_path)
    for name in res.tables:
        pd.testing.assert_frame_equal(back.tables[name], res.tables[name])


def _all_scenarios() -> list[tuple[str, str, str]]:
    found = [
        (f"builtin:{n}", builtin.read_text(n), builtin.source_name(n)) for n in builtin.names()
    ]
    found += [(p.name, p.read_text(), str(p)) for p in sorted((REPO / "scenarios").glob("*.toml"))]
    return found


@pytest.mark.parametrize(
    "label, text, source",
    _all_scenarios(),
    ids=lambda v: v if isinstance(v, str) and len(v) < 40 else "",
)
def test_shipped_scenarios_validate(core, label, text, source):
    core.validate(text, source)


def _queue_mean_pkts(res: latlab.Results, link: str, from_ns: float) -> float:
    links = res.links.set_index("name")
    ls = res.link_samples
    ls = ls[(ls["link_id"] == links.loc[link, "link_id"]) & (ls["time_ns"] >= from_ns)]
    return float(ls["queue_pkts"].mean())


def test_bbr_vs_cubic_scenarios(core):
    """scenarios/bbr-vs-cubic*.toml: BBR's own 4-BDP bottleneck holds a small queue, CUBIC's a nearly full one;
    through one shared bottleneck both flows see CUBIC's queue (the figures their header comments give)."""
    sep = latlab.run(REPO / "scenarios" / "bbr-vs-cubic.toml")
    assert sep.conservation_ok
    bbr_q = _queue_mean_pkts(sep, "server-a->client-a", 5e9)
    cubic_q = _queue_mean_pkts(sep, "server-b->client-b", 5e9)
    assert bbr_q < 0.1 * cubic_q and cubic_q > 200, (bbr_q, cubic_q)
    lat = sep.latency_per_flow().set_index("flow_id")
    assert lat.loc[0, "p99_ms"] < lat.loc[1, "p50_ms"], lat  # BBR's p99 RTT below CUBIC's median
    assert (sep.flows["goodput_bps"] > 18e6).all(), sep.flows  # both fill their own 20 Mbit/s link

    shared = latlab.run(REPO / "scenarios" / "bbr-vs-cubic-shared.toml")
    assert shared.conservation_ok
    assert _queue_mean_pkts(shared, "server->client", 5e9) > 200
    lat = shared.latency_per_flow().set_index("flow_id")
    assert (lat["p50_ms"] > 150).all(), lat  # both flows wait behind the same, nearly full FIFO
    good = shared.flows.set_index("cc")["goodput_bps"]
    assert good["bbr"] < good["cubic"] and good.sum() > 18e6, good


def test_default_scenario_runs_briefly(core):
    res = latlab.run(latlab.Scenario.builtin("default").with_(duration_s=3, measure_from_s=1))
    assert res.conservation_ok and len(res.flows) == 20
    assert set(res.flows["cc"]) == {"newreno", "cubic"}


def test_cc_samples_only_with_a_model_based_controller(core):
    """BBR runs carry its model every sample (the cc_samples table); a NewReno run has none, and the empty frame
    still has the table's columns."""
    bbr = latlab.run(
        latlab.Scenario.from_toml_str(TINY_TOML.replace('"newreno"', '"bbr"'), "tiny.toml")
    )
    cs = bbr.cc_samples
    assert list(cs.columns) == list(schema.CC_SAMPLES)
    assert len(cs) == len(bbr.flow_samples) > 0
    assert set(cs["mode"]) <= {"startup", "drain", "probe_bw", "probe_rtt"}
    last = cs.sort_values("time_ns").groupby("flow_id").tail(1)
    assert (last["bw_bps"] > 0).all() and (last["min_rtt_ns"] > 0).all(), last
    reno = latlab.run(latlab.Scenario.from_toml_str(TINY_TOML, "tiny.toml"))
    assert "cc_samples" not in reno.tables
    assert list(reno.cc_samples.columns) == list(schema.CC_SAMPLES) and reno.cc_samples.empty
