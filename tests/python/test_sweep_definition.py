"""Sweep definitions: TOML and Python, the grid × cases × seeds expansion, run ids."""

from pathlib import Path

import pytest

from conftest import REPO, TINY_TOML
from latlab.scenario import Scenario
from latlab.sweep import RunSpec, Sweep, SweepError, as_runs, run_id_of


@pytest.fixture
def base():
    return Scenario.from_toml_str(TINY_TOML, source="tiny.toml")


def test_grid_times_seeds_in_order(base):
    sw = Sweep(
        base,
        grid={"flows.0.cc": ["newreno", "cubic"], "topology.core_queue.limit_bytes": [1, 2, 3]},
        seeds=[7, 8],
    )
    runs = sw.runs()
    assert len(runs) == len(sw) == 12
    assert runs[0].params == {
        "flows.0.cc": "newreno",
        "topology.core_queue.limit_bytes": 1,
        "seed": 7,
    }
    assert runs[1].params["seed"] == 8 and runs[2].params["topology.core_queue.limit_bytes"] == 2
    assert runs[-1].params == {
        "flows.0.cc": "cubic",
        "topology.core_queue.limit_bytes": 3,
        "seed": 8,
    }
    assert runs[-1].scenario.get("flows.0.cc") == "cubic" and runs[-1].scenario.seed == 8
    assert base.get("flows.0.cc") == "newreno"  # the base is untouched
    assert len({r.run_id for r in runs}) == 12


def test_cases_crossed_with_grid_and_seed_count(base):
    sw = Sweep(
        base,
        cases=[
            {"topology.core_rate_bps": 5e6},
            {"topology.core_rate_bps": 20e6, "duration_s": 1.0},
        ],
        grid={"flows.0.cc": ["newreno", "cubic"]},
        seeds=3,
    )
    runs = sw.runs()
    assert len(runs) == 12 and [r.params["seed"] for r in runs[:3]] == [1, 2, 3]
    assert runs[6].params == {
        "topology.core_rate_bps": 20e6,
        "duration_s": 1.0,
        "flows.0.cc": "newreno",
        "seed": 1,
    }


def test_no_seeds_keeps_the_scenario_seed(base):
    runs = Sweep(base, grid={"flows.0.cc": ["cubic"]}).runs()
    assert len(runs) == 1 and "seed" not in runs[0].params and runs[0].scenario.seed == 3


def test_run_id_is_a_hash_of_the_resolved_scenario(base):
    same = Scenario.from_dict(base.to_dict())
    assert run_id_of(base) == run_id_of(same)
    assert len(run_id_of(base)) == 16 and int(run_id_of(base), 16) >= 0
    assert run_id_of(base.with_(seed=4)) != run_id_of(base)
    # however it was reached: key order and the path spelling do not matter
    a = base.with_({"flows[0].cc": "cubic", "seed": 9})
    b = base.with_({"seed": 9}).with_({"flows.0.cc": "cubic"})
    assert run_id_of(a) == run_id_of(b)
    assert RunSpec.of(a, {"x": 1}).run_id == run_id_of(a)


def test_runs_from_pairs_and_scenarios(base):
    import numpy as np

    runs = as_runs(
        [
            ({"load": np.float64(0.5)}, base.with_(seed=1)),
            base.with_(seed=2),
            base.with_(seed=3).to_dict(),
        ]
    )
    assert [type(r.params.get("load")) for r in runs] == [float, type(None), type(None)]
    assert len({r.run_id for r in runs}) == 3
    with pytest.raises(SweepError, match="same scenario"):
        as_runs([({"a": 1}, base), ({"a": 2}, base.copy())])
    with pytest.raises(TypeError):
        as_runs(base)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"grid": {"flows.0.cc": "cubic"}}, "expected a list"),
        ({"grid": {"flows.0.cc": []}}, "empty"),
        ({"grid": {"flows": {"0": {"cc": ["cubic"]}}}}, "quoted"),
        ({"seeds": []}, "empty"),
        ({"seeds": [1, 1]}, "twice"),
        ({"seeds": [1], "grid": {"seed": [1, 2]}}, "seeds"),
        ({"cases": [{"flows.0.cc": "x"}], "grid": {"flows.0.cc": ["y"]}}, "one place"),
        ({"timeout_s": -1}, "timeout_s"),
    ],
)
def test_invalid_definitions(base, kwargs, message):
    with pytest.raises(SweepError, match=message):
        Sweep(base, **kwargs)


def test_bad_key_path_names_the_key(base):
    with pytest.raises(SweepError, match=r"flows\[5\]"):
        Sweep(base, grid={"flows.5.cc": ["cubic"]}).runs()


def test_from_toml_with_base_file(tmp_path):
    (tmp_path / "tiny.toml").write_text(TINY_TOML)
    path = tmp_path / "s.toml"
    path.write_text(
        'base = "tiny.toml"\nseeds = 2\ntimeout_s = 9\n[grid]\n"flows.0.cc" = ["newreno", "cubic"]\n'
    )
    sw = Sweep.from_toml(path)
    assert sw.name == "s" and sw.timeout_s == 9 and len(sw.runs()) == 4
    assert sw.runs()[0].scenario.core_source == f"{tmp_path / 'tiny.toml'} (modified)"


def test_from_toml_inline_base_and_builtin(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        'name = "x"\n[base]\nduration_s = 1\n[[cases]]\nseed = 4\n[[cases]]\nseed = 5\n'
    )
    sw = Sweep.from_toml(path)
    assert sw.name == "x" and [r.scenario.seed for r in sw.runs()] == [4, 5]
    path.write_text('base = "default"\nseeds = [1]\n')
    assert Sweep.from_toml(path).runs()[0].scenario.name == "default"


@pytest.mark.parametrize(
    "text, message",
    [
        ('base = "tiny.toml"\nbogus = 1\n', "bogus: unknown key"),
        ("seeds = 2\n", "base: missing"),
        ('base = "nope.toml"\n', "no such scenario file"),
        ('base = "tiny.toml"\ngrid = 3\n', "grid"),
        ('base = "tiny.toml"\n[grid]\nflows.0.cc = ["cubic"]\n', "quoted"),
        ("base = [\n", "invalid TOML"),
    ],
)
def test_from_toml_errors_name_the_file(tmp_path, text, message):
    (tmp_path / "tiny.toml").write_text(TINY_TOML)
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(SweepError, match=message) as info:
        Sweep.from_toml(path)
    assert str(info.value).startswith(str(path))


def test_example_sweep_files_resolve():
    files = sorted(Path(REPO, "scenarios", "sweeps").glob("*.toml"))
    assert files
    for path in files:
        runs = Sweep.from_toml(path).runs()
        assert runs and len({r.run_id for r in runs}) == len(runs)
    assert len(Sweep.from_toml(REPO / "scenarios" / "sweeps" / "buffer.toml")) == 32


def test_example_sweep_runs_are_valid_scenarios(core):
    for path in sorted(Path(REPO, "scenarios", "sweeps").glob("*.toml")):
        for run in Sweep.from_toml(path).runs():
            run.scenario.validate()
