"""benches/validation/red_small_buffer.py: latlab's side of the RED-at-small-buffers comparison, end to end."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benches" / "validation" / "red_small_buffer.py"


def _load():
    spec = importlib.util.spec_from_file_location("red_small_buffer", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_two_packet_red_is_droptail_and_the_page_says_so(tmp_path, capsys):
    pytest.importorskip("latlab._core")
    mod = _load()
    page = tmp_path / "red.md"
    args = [
        "--skip-ns3",
        "--flows",
        "10",
        "--duration",
        "12",
        "--measure-from",
        "4",
        "--buffers",
        "2,5",
        "--json",
        "--markdown",
        str(page),
    ]
    assert mod.main(args) == 0
    rows = [json.loads(ln) for ln in capsys.readouterr().out.splitlines() if ln.startswith("{")]
    by = {(r["kind"], r["buffer_pkts"]): r for r in rows}
    assert len(rows) == 6
    for k in ("red", "red-nowait"):
        assert by[(k, 2)]["early_drops"] == 0
        assert by[(k, 2)]["core_drops"] == by[("droptail", 2)]["core_drops"] > 0
        assert by[(k, 2)]["goodput_mbps"] == by[("droptail", 2)]["goodput_mbps"]
    text = page.read_text()
    assert "| 2 pkt | RED | " in text and "at 2 pkt" in text and "DropTail exactly" in text
    # re-rendering from the printed rows gives the same page
    jl = tmp_path / "rows.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    again = tmp_path / "again.md"
    assert mod.main(args[:-1] + [str(again), "--from-jsonl", str(jl)]) == 0
    assert again.read_text().split("\n", 3)[3] == text.split("\n", 3)[3]


def test_bad_buffers_are_a_usage_error():
    mod = _load()
    with pytest.raises(SystemExit) as e:
        mod.parse_args(["--buffers", "2,x"])
    assert e.value.code == 2
