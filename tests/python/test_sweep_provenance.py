"""A sweep never reuses a run made by another latlab version or core build,
and a run whose packet conservation check fails is failed, not ok."""

from __future__ import annotations

import json

import pytest

import latlab
from conftest import TINY_TOML
from latlab.sweep import StaleRunsError, SweepFailed, run_all, run_sweep
from latlab.sweep.store import STATUS_JSON, Store
from latlab.sweep.worker import core_build, provenance


def runs():
    base = latlab.Scenario.from_toml_str(TINY_TOML, source="tiny.toml")
    return [({"seed": s}, base.with_(seed=s)) for s in (1, 2)]


def statuses(out):
    return {
        p.parent.name: json.loads(p.read_text()) for p in (out / "runs").glob(f"*/{STATUS_JSON}")
    }


def age(out, run_id, **fields):
    """Pretend a finished run was made by another build."""
    path = out / "runs" / run_id / STATUS_JSON
    st = json.loads(path.read_text())
    st.update(fields)
    path.write_text(json.dumps(st))


def test_each_status_records_the_version_and_core_build(fake_core, tmp_path):
    run_sweep(runs(), tmp_path / "s", inline=True, progress=False)
    for st in statuses(tmp_path / "s").values():
        assert st["status"] == "ok"
        assert st["latlab_version"] == latlab.__version__
        assert st["core_build"] == core_build() and st["core_build"]


def test_core_build_is_a_hash_of_the_loaded_extension(fake_core):
    # The fake core is a file too: its build id is that file's digest.
    assert core_build().startswith("sha256:") and len(core_build()) == len("sha256:") + 16
    assert provenance() == {"latlab_version": latlab.__version__, "core_build": core_build()}


def test_a_run_by_another_build_is_redone_and_said_so(fake_core, tmp_path, capsys):
    out = tmp_path / "s"
    run_sweep(runs(), out, inline=True, progress=False)
    stale_id = sorted(statuses(out))[0]
    age(out, stale_id, core_build="sha256:0000000000000000", started_at="then")
    # Progress on: the redo is announced.
    run_sweep(runs(), out, inline=True, progress=True)
    err = capsys.readouterr().err
    assert (
        "1 finished run" in err
        and "another latlab version or core build" in err
        and "redoing" in err
    )
    assert "sha256:0000000000000000" in err
    after = statuses(out)
    assert after[stale_id]["core_build"] == core_build() and after[stale_id]["started_at"] != "then"
    assert after[stale_id]["attempt"] == 2


def test_a_run_from_another_version_or_without_provenance_is_redone(fake_core, tmp_path):
    out = tmp_path / "s"
    run_sweep(runs(), out, inline=True, progress=False)
    a, b = sorted(statuses(out))
    age(out, a, latlab_version="0.0.1")
    path = out / "runs" / b / STATUS_JSON
    st = json.loads(path.read_text())
    del st["latlab_version"], st["core_build"]  # made before provenance was recorded
    path.write_text(json.dumps(st))
    run_sweep(runs(), out, inline=True, progress=False)
    for st in statuses(out).values():
        assert st["latlab_version"] == latlab.__version__ and st["attempt"] == 2


def test_stale_runs_can_be_refused_with_a_clear_message(fake_core, tmp_path):
    out = tmp_path / "s"
    run_sweep(runs(), out, inline=True, progress=False)
    stale_id = sorted(statuses(out))[0]
    age(out, stale_id, latlab_version="0.0.1")
    before = statuses(out)
    with pytest.raises(
        StaleRunsError,
        match=r"another latlab version.*latlab_version 0\.0\.1.*another output folder",
    ):
        run_sweep(runs(), out, inline=True, progress=False, stale="refuse")
    assert statuses(out) == before  # nothing ran
    # Same build: nothing is stale, nothing is refused.
    run_sweep(runs(), out, inline=True, progress=False)
    run_sweep(runs(), out, inline=True, progress=False, stale="refuse")
    with pytest.raises(ValueError, match="stale must be one of"):
        run_sweep(runs(), out, inline=True, progress=False, stale="keep")


def test_a_conservation_failure_is_a_failed_run_not_a_result(fake_core, monkeypatch, tmp_path):
    monkeypatch.setattr(fake_core, "BREAK_CONSERVATION", True)
    out = tmp_path / "s"
    catalog = run_sweep(runs(), out, inline=True, progress=False)
    assert set(catalog["status"]) == {"failed"}
    assert set(catalog["error_kind"]) == {"conservation"}
    assert all("conservation check failed on left->right" in e for e in catalog["error"])
    # Not counted as results: run_all refuses them ...
    with pytest.raises(SweepFailed, match="conservation"):
        run_all([sc for _, sc in runs()], out, inline=True, progress=False)
    # ... and once the core conserves packets, they are run again (failures are retried).
    monkeypatch.setattr(fake_core, "BREAK_CONSERVATION", False)
    catalog = run_sweep(runs(), out, inline=True, progress=False)
    assert set(catalog["status"]) == {"ok"}


def test_packets_held_by_no_link_also_fail_the_run(fake_core, monkeypatch, tmp_path):
    monkeypatch.setattr(fake_core, "BREAK_WHOLE", True)
    catalog = run_sweep(runs(), tmp_path / "s", inline=True, progress=False)
    assert set(catalog["status"]) == {"failed"}
    assert all("not held by any link" in e for e in catalog["error"])
    assert Store(tmp_path / "s").read_status(catalog["run_id"][0])["error_kind"] == "conservation"
