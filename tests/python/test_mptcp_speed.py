"""benches/mptcp_speed.py: counting a callgrind profile's instructions by source area (no valgrind needed)."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benches" / "mptcp_speed.py"
spec = importlib.util.spec_from_file_location("mptcp_speed", SCRIPT)
ms = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ms)

# A callgrind output in the tool's own compressed form: file and function
# names given once as "(id) name" and then as "(id)"; inlined code switched
# to with fi=/fe=; a call's inclusive cost on the line after calls=.
PROFILE = """\
# callgrind format
version: 1
positions: line
events: Ir

ob=(1) /bin/latlab-sim
fl=(1) /src/crates/sim/src/sim.rs
fn=(1) poll_mptcp_sender
10 100
fi=(2) /src/crates/proto/src/mptcp/connection.rs
300 40
fi=(3) /rustc/abc/library/core/src/slice/index.rs
272 7
fe=(1)
11 3
cfi=(4) /src/crates/proto/src/tcp/sender/transmit.rs
cfn=(2) new_chunk
calls=5 200
12 999

fl=(4)
fn=(2)
200 50
fi=(3)
272 2
fl=(5) /usr/lib/libc.so.6
fn=(3) malloc
1 9
"""


def test_instructions_count_where_their_source_line_was_written(tmp_path):
    out = tmp_path / "callgrind.out"
    out.write_text(PROFILE)
    areas = ms.callgrind_by_area(out)
    # The call line's 999 is the callee's inclusive cost: not counted again.
    assert areas == {"simulator": 103, "mptcp": 40, "std": 9, "tcp": 50, "other": 9}
    assert sum(areas.values()) == 211


def test_areas_by_path():
    assert ms.area_of("/w/crates/proto/src/cc/lia.rs") == "mptcp"
    assert ms.area_of("/w/crates/proto/src/cc/newreno.rs") == "tcp"
    assert ms.area_of("/w/crates/proto/src/segment.rs") == "segment"
    assert ms.area_of("/w/crates/qdisc/src/droptail.rs") == "simulator"
    assert ms.area_of("/rustc/0123/library/alloc/src/vec/mod.rs") == "std"
    assert ms.area_of("./csu/libc-start.c") == "other"
    assert set(ms.AREA_LABELS) == {a for a, _ in ms.AREAS} | {"other"}
