"""The helpers the studies' runs on the namespace testbed share (latlab.studies._real_runs)."""

from __future__ import annotations

from pathlib import Path

from latlab.studies import _real_runs as runs


def test_a_case_under_tcp_memory_pressure_runs_once_more_in_a_fresh_folder(tmp_path: Path) -> None:
    work = tmp_path / "case0"
    work.mkdir()
    seen: list[list[str]] = []

    def run(w: Path) -> list[dict]:
        seen.append(sorted(p.name for p in w.iterdir()))
        (w / "trace").write_text("x")
        return [{"tcp_mem_pressure": len(seen) == 1, "n": len(seen)}]

    rows = runs.measure_case(run, work, wait_s=0.0)
    assert rows == [{"tcp_mem_pressure": False, "n": 2}]
    assert seen == [[], []]  # the second attempt starts from an empty folder


def test_a_case_without_pressure_runs_once(tmp_path: Path) -> None:
    calls = []
    rows = runs.measure_case(
        lambda w: calls.append(w) or [{"tcp_mem_pressure": False}], tmp_path, wait_s=0.0
    )
    assert len(calls) == 1 and rows == [{"tcp_mem_pressure": False}]


def test_rows_appended_one_by_one_read_back(tmp_path: Path) -> None:
    jsonl = tmp_path / "real.jsonl"
    jsonl.write_text("")
    for i in range(3):
        runs.append_row(jsonl, {"i": i, "with": "auto"})
    assert runs.load_rows(jsonl) == [{"i": i, "with": "auto"} for i in range(3)]


def test_rows_where_and_first_row_match_every_field() -> None:
    rows = [
        {"experiment": "baseline", "path": "wired"},
        {"experiment": "baseline", "path": "wifi"},
        {"experiment": "mptcp"},
    ]
    assert runs.rows_where(rows, {"experiment": "baseline"}) == rows[:2]
    assert runs.first_row(rows, {"experiment": "baseline", "path": "wifi"}) == rows[1]
    assert runs.first_row(rows, {"experiment": "throttle"}) is None


def test_a_machine_without_root_is_told_so(monkeypatch) -> None:
    monkeypatch.setattr(runs.os, "geteuid", lambda: 1000)
    reason = runs.testbed_unavailable_reason("the real runs", "network namespaces", ("ip",))
    assert reason == "the real runs need root (network namespaces)"


def test_missing_tools_are_named(monkeypatch) -> None:
    monkeypatch.setattr(runs.os, "geteuid", lambda: 0)
    monkeypatch.setattr(runs.shutil, "which", lambda t: None if t == "tc" else f"/sbin/{t}")
    reason = runs.testbed_unavailable_reason("the real MPTCP runs", "tc", ("ip", "tc"))
    assert reason == "the real MPTCP runs need iproute2 (tc missing)"
