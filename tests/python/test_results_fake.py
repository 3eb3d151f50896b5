"""run() and Results against the fake core: conversion, files, conservation reporting, plots."""

import json
import warnings

import pandas as pd
import pytest

import latlab
from conftest import TINY_TOML
from latlab import plot, schema
from latlab.errors import ConservationWarning


def test_run_gives_documented_tables(fake_core, tiny_toml):
    res = latlab.run(tiny_toml)
    for name, columns in schema.TABLES.items():
        assert set(columns) <= set(res.tables[name].columns), name
    assert list(res.conservation.columns) == list(schema.CONSERVATION)
    assert res.conservation_ok
    assert "extra_future_column" in res.links  # extra columns pass through
    assert str(res.flows["size_bytes"].dtype) == "UInt64"  # nullable, never float
    info = res.run_info
    assert {"name", "seed", "duration_s", "events", "wall_s", "events_per_s"} <= set(info)
    assert info["name"] == "tiny" and info["seed"] == 3 and info["duration_s"] == 2.0


def test_run_accepts_scenarios_dicts_and_seed(fake_core):
    sc = latlab.Scenario.from_toml_str(TINY_TOML)
    assert latlab.run(sc.to_dict()).run_info["seed"] == 3
    res = latlab.run(sc, seed=42)
    assert res.run_info["seed"] == 42 and res.scenario.seed == 42
    assert sc.seed == 3  # the caller's scenario is untouched


def test_run_steps_adaptively(fake_core, monkeypatch):
    made = []
    original = fake_core.Simulation

    def spy(*a, **k):
        made.append(original(*a, **k))
        return made[-1]

    monkeypatch.setattr(fake_core, "Simulation", spy)
    latlab.run(latlab.Scenario.from_toml_str(TINY_TOML))
    calls = made[0].run_until_calls
    assert calls[-1] == made[0].duration_ns and len(calls) > 1


def test_write_and_load_round_trip(fake_core, tmp_path):
    res = latlab.run(latlab.Scenario.from_toml_str(TINY_TOML), outdir=tmp_path / "out")
    out = tmp_path / "out"
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        [
            "flows.parquet",
            "flow_samples.parquet",
            "links.parquet",
            "link_samples.parquet",
            "conservation.parquet",
            "run.json",
            "scenario.toml",
        ]
    )
    assert not [n for n in names if n.endswith(".tmp")]
    back = latlab.Results.load(out)
    for name in res.tables:
        pd.testing.assert_frame_equal(back.tables[name], res.tables[name])
    pd.testing.assert_frame_equal(back.conservation, res.conservation)
    assert back.run_info == json.loads(json.dumps(res.run_info))
    assert back.scenario == res.scenario


def test_write_keeps_other_files(fake_core, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    latlab.run(latlab.Scenario.from_toml_str(TINY_TOML), outdir=tmp_path)
    latlab.run(latlab.Scenario.from_toml_str(TINY_TOML), outdir=tmp_path, seed=5)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert latlab.Results.load(tmp_path).run_info["seed"] == 5


def test_load_rejects_non_results_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a latlab results folder"):
        latlab.Results.load(tmp_path)


def test_conservation_failure_is_loud(fake_core, monkeypatch):
    monkeypatch.setattr(fake_core, "BREAK_CONSERVATION", True)
    with pytest.warns(ConservationWarning, match="left->right"):
        res = latlab.run(latlab.Scenario.from_toml_str(TINY_TOML))
    assert not res.conservation_ok
    assert res.run_info["conservation_ok"] is False
    assert list(res.conservation_failures()["link"]) == ["left->right"]


def test_unheld_packets_are_a_conservation_failure(fake_core, monkeypatch):
    monkeypatch.setattr(fake_core, "BREAK_WHOLE", True)
    with pytest.warns(ConservationWarning, match="not held by any link"):
        res = latlab.run(latlab.Scenario.from_toml_str(TINY_TOML))
    assert not res.conservation_ok and res.conservation_failures().empty


def test_no_warning_when_conserved(fake_core):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConservationWarning)
        latlab.run(latlab.Scenario.from_toml_str(TINY_TOML))


def test_summary_and_busiest_link(fake_core):
    res = latlab.run(latlab.Scenario.from_toml_str(TINY_TOML))
    s = res.summary()
    assert s["flows"] == 2 and s["busiest_link"] == "left->right" and s["conservation_ok"]
    assert s["mean_goodput_bps"] == pytest.approx(res.flows["goodput_bps"].mean())


@pytest.mark.parametrize("flows", [2, 60])
def test_overview_png(fake_core, tmp_path, flows):
    sc = latlab.Scenario.from_toml_str(TINY_TOML).set("flows.0.count", flows)
    path = plot.overview(latlab.run(sc), tmp_path / "overview.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_overview_without_samples(fake_core, tmp_path):
    sc = latlab.Scenario.from_toml_str(TINY_TOML).set("sample_interval_ms", 0)
    res = latlab.run(sc)
    assert len(res.flow_samples) == 0
    assert plot.overview(res, tmp_path / "o.png").stat().st_size > 0


def test_pick_flows_spans_groups(fake_core):
    sc = latlab.Scenario.from_toml_str(TINY_TOML).set("flows.0.count", 10)
    sc.set(
        "flows",
        sc.get("flows")
        + [{"name": "cubic", "count": 10, "src": "s{i}", "dst": "d{i}", "cc": "cubic"}],
    )
    picked = plot.pick_flows(latlab.run(sc))
    groups = set(latlab.run(sc).flows.set_index("flow_id").loc[picked, "group"])
    assert len(picked) == 5 and groups == {"bulk", "cubic"}


def test_missing_core_is_explained(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "latlab._core", None)  # makes the import fail
    with pytest.raises(latlab.CoreNotBuiltError, match="maturin develop"):
        latlab.run(latlab.Scenario.from_toml_str(TINY_TOML))
