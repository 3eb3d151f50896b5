"""latlab against stored ns-3 numbers on a few tiny dumbbell points (benches/validation/ns3_grid.py).

tests/python/data/ns3_reference.json was written by the harness with --write-reference (it records the
ns-3 version and the command); this test runs only latlab's side of each point, so ns-3 is not needed.
Tolerances are the issue's: aggregate goodput within 5 %, core loss rate within 10 % relative.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benches" / "validation" / "ns3_grid.py"
REFERENCE = Path(__file__).resolve().parent / "data" / "ns3_reference.json"


def _grid():
    spec = importlib.util.spec_from_file_location("ns3_grid", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


def _reference() -> dict:
    return json.loads(REFERENCE.read_text())


def test_reference_file_names_its_source():
    ref = _reference()
    assert ref["ns3_version"].startswith("ns-3 3.")
    assert "ns3_grid.py" in ref["command"] and "--write-reference" in ref["command"]
    assert len(ref["points"]) >= 2


@pytest.mark.parametrize("i", range(len(_reference()["points"])))
def test_latlab_matches_ns3_reference(i):
    pytest.importorskip("latlab._core")
    grid = _grid()
    ref = _reference()
    want = ref["points"][i]
    pt = grid.Point(
        **{
            k: want[k]
            for k in ("flows", "buffer", "cc", "qdisc", "seed", "duration_s", "measure_from_s")
        }
    )
    assert pt.buffer_pkts() == want["buffer_pkts"], (
        "the point's buffer no longer resolves to the stored one"
    )
    got = grid.reduce(grid.latlab_point(pt))
    tol = ref["tolerance"]
    assert got["goodput_mbps"] == pytest.approx(want["goodput_mbps"], rel=tol["goodput_rel"]), (
        got,
        want,
    )
    assert got["loss_rate"] == pytest.approx(want["loss_rate"], rel=tol["loss_rel"]), (got, want)
