"""Running sweeps: the pool, inline and Dask runners, the catalog, failures, resume."""

from __future__ import annotations

import importlib.util
import json
import os
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

import latlab
from conftest import PYTHON_SRC, TINY_TOML
from latlab.sweep import Sweep, SweepFailed, load_catalog, load_run, run_all, run_sweep
from latlab.sweep.store import CATALOG, STATUS_JSON, Store

FAULTS_DIR = Path(__file__).parent / "sweep_faults"
QUICK_TOML = TINY_TOML.replace("duration_s = 2.0", "duration_s = 1.0")


def fault_env(counter: Path | None = None, slow_s: float | None = None) -> dict[str, str]:
    """Environment variables that make sweep worker processes load tests/python/sweep_faults."""
    path = [str(FAULTS_DIR), str(PYTHON_SRC)] + [
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p
    ]
    env = {"PYTHONPATH": os.pathsep.join(path), "LATLAB_TEST_FAULTS": "1"}
    if counter is not None:
        env["LATLAB_TEST_COUNTER"] = str(counter)
    if slow_s:
        env["LATLAB_TEST_SLOW_S"] = str(slow_s)
    return env


def count_runs(counter: Path) -> Counter:
    return Counter(counter.read_text().splitlines()) if counter.exists() else Counter()


def load_faults_module():
    spec = importlib.util.spec_from_file_location(
        "latlab_test_faults", FAULTS_DIR / "sitecustomize.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def base():
    return latlab.Scenario.from_toml_str(QUICK_TOML, source="quick.toml")


@pytest.fixture
def counter(monkeypatch, tmp_path):
    """Workers started in this test count their runs in the returned file."""
    path = tmp_path / "counter.txt"
    for key, value in fault_env(path).items():
        monkeypatch.setenv(key, value)
    return path


def mtimes(out: Path, run_ids) -> dict[str, tuple[int, int]]:
    store = Store(out)
    return {
        r: (
            (store.run_dir(r) / STATUS_JSON).stat().st_mtime_ns,
            (store.run_dir(r) / "run.json").stat().st_mtime_ns,
        )
        for r in run_ids
    }


# ----- the local pool ----------------------------------------------------------


def test_pool_sweep_catalog_and_resume(core, counter, base, tmp_path):
    sweep = Sweep(base, grid={"flows.0.cc": ["newreno", "cubic"]}, seeds=[1, 2], name="t")
    out = tmp_path / "sweep"
    catalog = run_sweep(sweep, out, jobs=2, progress=False)

    specs = sweep.runs()
    assert catalog["run_id"].tolist() == [s.run_id for s in specs]
    assert catalog["status"].tolist() == ["ok"] * 4
    assert catalog["flows.0.cc"].tolist() == ["newreno", "newreno", "cubic", "cubic"]
    assert catalog["seed"].tolist() == [1, 2, 1, 2]
    assert (catalog["attempt"] == 1).all() and catalog["conservation_ok"].all()
    assert (catalog["wall_s"] > 0).all() and (catalog["events"] > 0).all()
    # the catalog on disk is the same table, readable by anything that reads Parquet
    on_disk = pd.read_parquet(out / CATALOG)
    pd.testing.assert_frame_equal(on_disk, catalog)
    import pyarrow.parquet as pq

    assert pq.read_table(out / CATALOG).num_rows == 4
    # each run is a complete results folder; its summary is in the catalog
    for _, row in catalog.iterrows():
        res = load_run(out, row["run_id"])
        assert res.run_info["seed"] == row["seed"]
        assert res.summary()["mean_goodput_bps"] == pytest.approx(row["mean_goodput_bps"])
        assert res.scenario == next(s.scenario for s in specs if s.run_id == row["run_id"])
    assert sum(count_runs(counter).values()) == 4

    # the same sweep again: nothing runs, nothing is rewritten
    before = mtimes(out, catalog["run_id"])
    again = run_sweep(sweep, out, jobs=2, progress=False)
    assert sum(count_runs(counter).values()) == 4
    assert mtimes(out, catalog["run_id"]) == before
    pd.testing.assert_frame_equal(again, catalog)

    # a longer seed list: only the new runs are done
    more = run_sweep(
        Sweep(base, grid={"flows.0.cc": ["newreno", "cubic"]}, seeds=[1, 2, 3]),
        out,
        jobs=2,
        progress=False,
    )
    assert len(more) == 6 and (more["status"] == "ok").all()
    assert sum(count_runs(counter).values()) == 6
    assert mtimes(out, catalog["run_id"]) == before


def test_catalog_is_rebuilt_from_status_files(core, base, tmp_path):
    out = tmp_path / "sweep"
    catalog = run_sweep(Sweep(base, seeds=2), out, jobs=1, progress=False)
    (out / CATALOG).unlink()
    status_path = Store(out).run_dir(catalog["run_id"][1]) / STATUS_JSON
    status_path.unlink()  # as if killed before this run finished
    rebuilt = load_catalog(out)
    assert rebuilt["status"].tolist() == ["ok", "pending"]
    assert (out / CATALOG).is_file()
    assert load_catalog(out, refresh=False)["status"].tolist() == ["ok", "pending"]


def test_study_style_pairs_inline(core, base, tmp_path):
    pairs = [
        ({"rate_mbps": r}, base.with_({"topology.core_rate_bps": r * 1e6})) for r in (5, 10, 20)
    ]
    catalog = run_sweep(pairs, tmp_path / "s", inline=True, progress=False)
    assert catalog["rate_mbps"].tolist() == [5, 10, 20] and (catalog["status"] == "ok").all()
    assert json.loads((tmp_path / "s" / "sweep.json").read_text())["name"] == "sweep"


def test_invalid_scenario_fails_before_anything_runs(core, base, tmp_path):
    sweep = Sweep(base, grid={"topology.core_rate_bps": [10e6, -1.0]})
    with pytest.raises(latlab.ScenarioError, match=r"core_rate_bps.*in the run with"):
        run_sweep(sweep, tmp_path / "s", jobs=1, progress=False)
    assert not (tmp_path / "s" / "runs").exists()


# ----- failures ----------------------------------------------------------------


def test_failures_are_recorded_and_do_not_stop_the_others(core, counter, base, tmp_path):
    good = [({"case": f"ok{seed}"}, base.with_(seed=seed)) for seed in (1, 2)]
    bad = [
        ({"case": kind}, base.with_(name=f"fault-{kind}"))
        for kind in ("panic", "error", "crash", "hang")
    ]
    out = tmp_path / "sweep"
    catalog = run_sweep(good + bad, out, jobs=2, timeout_s=3, progress=False).set_index("case")

    assert catalog.loc[["ok1", "ok2"], "status"].tolist() == ["ok", "ok"]
    assert catalog.loc[["panic", "error", "crash", "hang"], "status"].tolist() == ["failed"] * 4
    kinds = catalog["error_kind"].to_dict()
    assert (kinds["panic"], kinds["error"], kinds["crash"], kinds["hang"]) == (
        "panic",
        "error",
        "crash",
        "timeout",
    )
    assert "PanicException: assertion failed: injected panic" in catalog.loc["panic", "error"]
    assert "RuntimeError: injected error" in catalog.loc["error", "error"]
    assert "SIGSEGV" in catalog.loc["crash", "error"]
    assert "timed out after 3 s" in catalog.loc["hang", "error"]
    assert catalog.loc["hang", "wall_s"] >= 3
    status = json.loads(
        (Store(out).run_dir(catalog.loc["panic", "run_id"]) / STATUS_JSON).read_text()
    )
    assert status["status"] == "failed" and "Traceback" in status["traceback"]

    # without retries nothing runs; with them only the failed runs are redone
    runs_before = sum(count_runs(counter).values())
    run_sweep(good + bad, out, jobs=2, timeout_s=3, progress=False, retry_failed=False)
    assert sum(count_runs(counter).values()) == runs_before
    ok_times = mtimes(out, catalog.loc[["ok1", "ok2"], "run_id"])
    again = run_sweep(good + bad[:2], out, jobs=2, progress=False).set_index("case")
    assert again.loc["panic", "attempt"] == 2 and again.loc["ok1", "attempt"] == 1
    assert mtimes(out, catalog.loc[["ok1", "ok2"], "run_id"]) == ok_times
    assert sum(count_runs(counter).values()) == runs_before + 2


def test_inline_runner_records_a_panic(core, base, monkeypatch, tmp_path):
    monkeypatch.setattr(core, "Simulation", load_faults_module().wrap(core.Simulation))
    runs = [({"case": "ok"}, base), ({"case": "panic"}, base.with_(name="fault-panic"))]
    catalog = run_sweep(runs, tmp_path / "s", inline=True, progress=False)
    assert catalog["status"].tolist() == ["ok", "failed"] and catalog["error_kind"][1] == "panic"


# ----- the same results everywhere ----------------------------------------------


@pytest.fixture(scope="module")
def dask_client():
    """One small Dask LocalCluster for this module's tests (its workers load the fault injection)."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    saved = dict(os.environ)
    os.environ.update(fault_env())
    try:
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        client = Client(cluster)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    yield client
    client.close()
    cluster.close()


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.suffix == ".parquet" or p.name == "scenario.toml"
    }


def test_identical_results_in_process_inline_pool_and_dask(core, base, tmp_path, dask_client):
    specs = Sweep(base, grid={"flows.0.cc": ["newreno", "cubic"]}, seeds=[5]).runs()
    for spec in specs:
        latlab.run(spec.scenario, outdir=tmp_path / "direct" / spec.run_id)
    run_sweep(specs, tmp_path / "inline", inline=True, progress=False)
    run_sweep(specs, tmp_path / "pool", jobs=2, progress=False)
    run_sweep(specs, tmp_path / "dask", dask=dask_client, progress=False)
    for spec in specs:
        reference = _files(tmp_path / "direct" / spec.run_id)
        assert {"flows.parquet", "links.parquet", "scenario.toml"} <= set(reference)
        for runner in ("inline", "pool", "dask"):
            folder = Store(tmp_path / runner).run_dir(spec.run_id)
            assert _files(folder) == reference, f"{runner} differs from a direct latlab.run"
            info = json.loads((folder / "run.json").read_text())["run"]
            assert (
                info["events"]
                == json.loads((tmp_path / "direct" / spec.run_id / "run.json").read_text())["run"][
                    "events"
                ]
            )


def test_dask_records_failures_and_timeouts(core, base, tmp_path, dask_client):
    runs = [
        ({"case": "ok"}, base),
        ({"case": "panic"}, base.with_(name="fault-panic")),
        ({"case": "hang"}, base.with_(name="fault-hang")),
    ]
    catalog = run_sweep(
        runs, tmp_path / "s", dask=dask_client, timeout_s=3, progress=False
    ).set_index("case")
    assert catalog["status"].to_dict() == {"ok": "ok", "panic": "failed", "hang": "failed"}
    assert (
        catalog.loc["panic", "error_kind"] == "panic"
        and catalog.loc["hang", "error_kind"] == "timeout"
    )
    assert Store(tmp_path / "s").read_status(catalog.loc["ok", "run_id"])["host"]
    assert load_run(tmp_path / "s", catalog.loc["ok", "run_id"]).conservation_ok


def test_run_all_returns_results_in_order(core, base, monkeypatch, tmp_path):
    scenarios = [base.with_(seed=2), base.with_(seed=1).to_dict(), base.with_(seed=2)]  # one twice
    results = run_all(scenarios, tmp_path / "s", jobs=2, progress=False)
    assert [r.run_info["seed"] for r in results] == [2, 1, 2]
    assert len(list((tmp_path / "s" / "runs").iterdir())) == 2
    direct = latlab.run(base.with_(seed=1))
    pd.testing.assert_frame_equal(results[1].flows, direct.flows)

    monkeypatch.setattr(core, "Simulation", load_faults_module().wrap(core.Simulation))
    with pytest.raises(SweepFailed, match="1 of 2 runs failed.*PanicException") as info:
        run_all(
            [base, ({"x": 1}, base.with_(name="fault-panic"))],
            tmp_path / "t",
            inline=True,
            progress=False,
        )
    assert info.value.catalog["status"].tolist() == ["ok", "failed"]
