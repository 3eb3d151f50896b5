"""benches/validation/sim_vs_linux.py without root: its cases, scenarios, table merging and page."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benches" / "validation" / "sim_vs_linux.py"


def _load():
    spec = importlib.util.spec_from_file_location("sim_vs_linux", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bbr_runs_the_droptail_grid_and_one_trace_path():
    svl = _load()
    bbr = svl.cases(("bbr",))
    assert len(bbr) == 7
    assert [c for c in bbr if c[3] != "droptail"] == [("bbr", 1, 1.0, "lte-variable")]
    assert all(p == "droptail" for *_, p in svl.cases(("newreno", "cubic")))
    assert len(svl.cases(svl.CCS)) == 19


def test_the_trace_case_replays_the_shipped_trace_in_the_simulator():
    pytest.importorskip("latlab._core")
    import latlab

    svl = _load()
    assert svl.TRACE_FILE.is_file()
    sc = svl.scenario("bbr", 1, 1.0, 3.0, 1.0, "lte-variable")
    r = latlab.run(sc)
    m = svl.metrics(r, 1.0)
    # The trace's first 3 s offer less than the fixed path's 20 Mbit/s would carry in the
    # same time, and the flow delivers something over it.
    fixed = svl.metrics(latlab.run(svl.scenario("bbr", 1, 1.0, 3.0, 1.0)), 1.0)
    assert 0 < m["goodput_mbps"] != fixed["goodput_mbps"]
    assert m["queue_max_pkts"] <= round(svl.BDP_PKTS)


def _row(svl, cc: str, commit: str, goodput_linux: float = 19.0) -> dict:
    row = {"cc": cc, "flows": 1, "buffer_bdp": 1.0, "path": "droptail", "commit": commit}
    row["kernel"] = "k1"
    for col, *_ in svl.COLUMNS:
        row[f"sim_{col}"] = 10.0 if col != "goodput_mbps" else 19.0
        row[f"linux_{col}"] = 10.0 if col != "goodput_mbps" else goodput_linux
    return row


def test_a_run_of_some_controllers_keeps_the_others_rows(tmp_path):
    svl = _load()
    table = tmp_path / "table.csv"
    pd.DataFrame([_row(svl, "newreno", "old"), _row(svl, "bbr", "old")]).to_csv(table, index=False)
    merged = svl.merge_rows(pd.DataFrame([_row(svl, "bbr", "new")]), table, ("bbr",))
    assert list(zip(merged["cc"], merged["commit"])) == [("newreno", "old"), ("bbr", "new")]
    assert svl.provenance(merged) == [
        "- newreno (1 rows): commit old, kernel k1.",
        "- bbr (1 rows): commit new, kernel k1.",
    ]


def test_the_page_flags_goodput_over_10_percent_only(tmp_path):
    svl = _load()
    table = tmp_path / "table.csv"
    rows = [
        _row(svl, "newreno", "a", goodput_linux=19.0 * 1.09),
        _row(svl, "bbr", "b", 19.0 * 1.11),
    ]
    pd.DataFrame(rows).to_csv(table, index=False)
    doc = tmp_path / "page.md"
    args = ["--from-table", "--table", str(table), "--doc", str(doc)]
    assert svl.main(args + ["--duration", "15", "--measure-from", "4"]) == 0
    page = doc.read_text()
    assert "- bbr, 1 flow(s), 1 BDP: goodput Mbit/s 19.00 (sim) vs 21.09 (Linux), +11 %." in page
    assert "newreno, 1 flow(s)" not in page.split("## Flagged differences")[1]
    assert "commit b, kernel k1" in page


def test_an_unknown_controller_is_a_usage_error(capsys):
    svl = _load()
    with pytest.raises(SystemExit) as e:
        svl.main(["--cc", "bbr,vegas", "--from-table"])
    assert e.value.code == 2
    assert "unknown controller(s) vegas" in capsys.readouterr().err
