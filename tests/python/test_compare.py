"""`latlab compare`: the scheme file, its translation into scenarios, and a small real comparison."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from latlab.cli import cli
from latlab.compare import CompareError, from_dict, load, translate
from latlab.compare import runner as compare_runner

REPO = Path(__file__).resolve().parents[2]

# A small dumbbell: 10 Mbit/s core, 5 ms, a 30 kB DropTail buffer.
PATH = """\
[path]
src = "s{i}"
dst = "d{i}"
sample_interval_ms = 100
topology = { kind = "dumbbell", pairs = 2, access_rate_bps = 100e6, access_delay_ms = 1, core_rate_bps = 10e6, core_delay_ms = 5, core_queue = { kind = "droptail", limit_bytes = 30000 } }
"""

SMALL = (
    """\
name = "small"
seeds = 2
flows = 1
duration_s = 3
measure_from_s = 1

"""
    + PATH
    + """
[[schemes]]
name = "cubic+droptail"
cc = "cubic"

[[schemes]]
name = "newreno+codel"
cc = "newreno"
queue = "codel"
"""
)


def write(tmp_path: Path, text: str, name: str = "schemes.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def spec_of(text: str):
    return from_dict(tomllib.loads(text), source="s.toml")


# ----- the file ----------------------------------------------------------------


@pytest.mark.parametrize(
    "change, expected",
    [
        (('name = "small"', 'name = "small"\ncolour = 1'), "colour: unknown key; expected one of"),
        (("seeds = 2", "seeds = 0"), "seeds: expected a seed count of at least 1, got 0"),
        (("seeds = 2", "seeds = [1, 1]"), "seeds: a seed appears twice"),
        (("flows = 1", 'flows = "two"'), "flows: expected a number of flows of at least 1"),
        (("measure_from_s = 1", "measure_from_s = 3"), "measure_from_s: expected a start"),
        (('cc = "cubic"', 'cc = "cubic"\nqueue = 5'), "schemes[0].queue: expected a queue kind"),
        (('cc = "cubic"', 'cc = "cubic"\nwindow = 5'), "schemes[0].window: unknown key"),
        (('cc = "cubic"', 'cc = "cubic"\necn = "yes"'), "schemes[0].ecn: expected true or false"),
        (
            ('cc = "cubic"', 'cc = "cubic"\ncc_params = 3'),
            "schemes[0].cc_params: expected a table of numbers",
        ),
        (('cc = "newreno"', ""), "schemes[1].cc: missing"),
        (
            ('name = "newreno+codel"', 'name = "cubic+droptail"'),
            "the name 'cubic+droptail' is used twice",
        ),
        (('src = "s{i}"', 'src = "s{i}"\nlink = 3'), "path.link: unknown key"),
    ],
)
def test_bad_file_exits_2_naming_the_key(tmp_path, change, expected):
    old, new = change
    assert old in SMALL
    path = write(tmp_path, SMALL.replace(old, new, 1))
    res = CliRunner().invoke(cli, ["compare", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert expected in res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "out").exists()


def test_path_file_and_inline_keys_exclude_each_other(tmp_path):
    text = SMALL.replace('src = "s{i}"', 'scenario = "x.toml"\nsrc = "s{i}"')
    with pytest.raises(CompareError, match="path.topology: give either path.scenario"):
        spec_of(text)


def test_custom_topology_needs_its_bottleneck_named():
    text = SMALL.replace('kind = "dumbbell"', 'kind = "custom"').replace('src = "s{i}"\n', "")
    with pytest.raises(CompareError, match="path.src: missing; a 'custom' topology"):
        spec_of(text)


def test_unknown_controller_is_blamed_on_the_scheme_key(core, tmp_path):
    path = write(tmp_path, SMALL.replace('cc = "newreno"', 'cc = "newrenoo"'))
    res = CliRunner().invoke(cli, ["compare", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "schemes[1].cc:" in res.output and "newrenoo" in res.output
    assert not (tmp_path / "out").exists()


def test_bad_queue_key_is_blamed_on_the_scheme_queue(core, tmp_path):
    path = write(
        tmp_path, SMALL.replace('queue = "codel"', 'queue = { kind = "codel", target = 5 }')
    )
    res = CliRunner().invoke(cli, ["compare", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "schemes[1].queue:" in res.output and "target" in res.output


def test_committed_scheme_files_are_valid(core):
    files = sorted((REPO / "scenarios" / "compare").glob("*.toml"))
    assert files
    for path in files:
        spec = load(path)
        assert len(spec.schemes) >= 6
        translate.check(spec)


# ----- the translation -------------------------------------------------------------


def test_scheme_keys_become_scenario_keys():
    text = SMALL + (
        '\n[[schemes]]\nname = "full"\ncc = "ledbat"\ncc_params = { target_ms = 25 }\n'
        'rwnd = "drwa"\nrwnd_params = { lambda = 3 }\npacing = true\n'
        'queue = { kind = "pie", target_ms = 20 }\n'
    )
    spec = spec_of(text)
    data = translate.scenario_data(spec, spec.schemes[2], seed=7, role=translate.ALONE)
    (group,) = data["flows"]
    assert (group["cc"], group["cc_params"]) == ("ledbat", {"target_ms": 25.0})
    assert group["tcp"] == {
        "rwnd_controller": "drwa",
        "rwnd_params": {"lambda": 3.0},
        "pacing": True,
    }
    # the scheme's queue, with the path's buffer size
    assert data["topology"]["core_queue"] == {"kind": "pie", "target_ms": 20, "limit_bytes": 30000}
    assert (data["seed"], data["duration_s"], data["measure_from_s"]) == (7, 3.0, 1.0)
    plain = translate.scenario_data(spec, spec.schemes[0], seed=1, role=translate.ALONE)
    assert "tcp" not in plain["flows"][0] and "cc_params" not in plain["flows"][0]
    assert plain["topology"]["core_queue"] == {"kind": "droptail", "limit_bytes": 30000}


def test_competition_puts_one_cubic_flow_beside_one_scheme_flow():
    spec = spec_of(SMALL.replace("flows = 1", "flows = 2"))
    alone = translate.scenario_data(spec, spec.schemes[1], seed=1, role=translate.ALONE)
    vs = translate.scenario_data(spec, spec.schemes[1], seed=1, role=translate.VS_CUBIC)
    assert [(g["name"], g["count"], g["cc"]) for g in alone["flows"]] == [("scheme", 2, "newreno")]
    assert [(g["name"], g["count"], g["cc"]) for g in vs["flows"]] == [
        ("scheme", 1, "newreno"),
        ("cubic", 1, "cubic"),
    ]
    assert vs["flows"][1]["first_index"] == 1  # the next dumbbell pair: the same core link
    assert [g["start_s"] for g in vs["flows"]] == [0.0, 0.0]  # neither gets the buffer first
    assert alone["flows"][0]["start_s"] == {"uniform": [0.0, 1.0]}
    assert vs["topology"]["core_queue"]["kind"] == "codel"


def test_ecn_sets_the_tcp_and_queue_keys_in_the_generated_text():
    """ECN's scenario keys ([tcp] ecn and a queue's ecn) are written as issue 31 names them;
    checked on the text, since whether the core takes them is another change's."""
    text = SMALL.replace('queue = "codel"', 'queue = "codel"\necn = true').replace(
        'cc = "cubic"', 'cc = "cubic"\necn = true'
    )
    spec = spec_of(text)
    codel = tomllib.loads(
        translate.scenario(spec, spec.schemes[1], 1, translate.VS_CUBIC).to_toml()
    )
    assert codel["topology"]["core_queue"] == {"kind": "codel", "limit_bytes": 30000, "ecn": True}
    assert codel["flows"][0]["tcp"] == {"ecn": True}
    assert "tcp" not in codel["flows"][1]  # the CUBIC competitor does not negotiate ECN
    droptail = tomllib.loads(
        translate.scenario(spec, spec.schemes[0], 1, translate.ALONE).to_toml()
    )
    assert droptail["flows"][0]["tcp"] == {"ecn": True}
    assert "ecn" not in droptail["topology"]["core_queue"]  # DropTail has nothing to mark with


EDGE_PATH = """\
seeds = 1
duration_s = 3
[path]
topology = { kind = "edge-dumbbell", edges = 1, hosts_per_edge = 2, access_rate_bps = 100e6, access_delay_ms = 1, edge_rate_bps = 100e6, edge_delay_ms = 2, core_rate_bps = 10e6, core_delay_ms = 5, core_queue = { kind = "droptail", limit_bytes = 20000 } }
[[schemes]]
name = "cubic"
cc = "cubic"
[[schemes]]
name = "cubic+pacer"
cc = "cubic"
edge_queue = { kind = "edge-pacer", delay_ms = 10, limit_packets = 1000 }
"""


def test_edge_queue_goes_to_the_path_edge_in_both_runs(core):
    spec = spec_of(EDGE_PATH)
    assert spec.path.edge == ("topology.edge_queue",)  # the edge-dumbbell's default
    pacer = {"kind": "edge-pacer", "delay_ms": 10, "limit_packets": 1000}
    for role in translate.ROLES:
        data = translate.scenario_data(spec, spec.schemes[1], seed=1, role=role)
        assert data["topology"]["edge_queue"] == pacer
        assert data["topology"]["core_queue"]["kind"] == "droptail"  # the bottleneck stays
        plain = translate.scenario_data(spec, spec.schemes[0], seed=1, role=role)
        assert "edge_queue" not in plain["topology"]
    translate.check(spec)  # the core takes both schemes' scenarios
    assert compare_runner.describe(spec.schemes[1], spec)["edge"] == "edge-pacer"
    assert compare_runner.describe(spec.schemes[0], spec)["edge"] == "(path's)"


def test_edge_queue_on_a_named_edge_and_a_bad_one_blamed_on_the_scheme(core):
    text = EDGE_PATH.replace("[path]", '[path]\nedge = ["topology.access_queue"]')
    spec = spec_of(text)
    data = translate.scenario_data(spec, spec.schemes[1], seed=1, role=translate.ALONE)
    assert data["topology"]["access_queue"]["kind"] == "edge-pacer"
    assert "edge_queue" not in data["topology"]
    bad = spec_of(EDGE_PATH.replace("delay_ms = 10,", "delay_ms = -1,"))
    with pytest.raises(CompareError, match=r"schemes\[1\]\.edge_queue: .*delay_ms"):
        translate.check(bad)


def test_edge_queue_needs_a_path_edge(tmp_path):
    text = SMALL.replace('queue = "codel"', 'queue = "codel"\nedge_queue = "edge-pacer"')
    path = write(tmp_path, text)
    res = CliRunner().invoke(cli, ["compare", str(path), "-o", str(tmp_path / "out")])
    assert res.exit_code == 2, res.output
    assert "schemes[1].edge_queue: the path has no edge queue to set" in res.output
    with pytest.raises(CompareError, match="path.edge: expected a dotted path"):
        spec_of(SMALL.replace('src = "s{i}"', 'edge = 3\nsrc = "s{i}"'))


def test_a_cellular_path_puts_the_scheme_queue_at_every_user():
    text = (
        'seeds = 1\n[path]\nscenario = "fq-codel-lte.toml"\n'
        '[[schemes]]\nname = "codel"\ncc = "cubic"\nqueue = "codel"\n'
    )
    spec = from_dict(tomllib.loads(text), source="s.toml", base_dir=REPO / "scenarios")
    assert (spec.path.src, spec.path.dst, spec.path.bottleneck) == (
        "server",
        "ue0",
        "topology.queue",
    )
    data = translate.scenario_data(spec, spec.schemes[0], 1, translate.ALONE)
    assert data["topology"]["queue"]["kind"] == "codel"
    assert all("queue" not in u for u in data["topology"]["user"])
    assert (spec.duration_s, spec.measure_from_s) == (40.0, 10.0)  # the scenario's


# ----- a real comparison ---------------------------------------------------------------


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    pytest.importorskip("latlab._core")
    tmp = tmp_path_factory.mktemp("compare")
    path = write(tmp, SMALL)
    res = CliRunner().invoke(cli, ["compare", str(path), "-o", str(tmp / "cli"), "--jobs", "2"])
    assert res.exit_code == 0, res.output
    return tmp, path, res.output


def test_table_numbers_are_the_runs_numbers(compared):
    from latlab.sweep import load_run

    tmp, _, output = compared
    out = tmp / "cli"
    seeds = pd.read_csv(out / "seeds.csv")
    table = pd.read_csv(out / "table.csv")
    assert list(table["scheme"]) == ["cubic+droptail", "newreno+codel"]
    assert len(seeds) == 4
    for _, row in seeds.iterrows():
        alone, vs = load_run(out, row["alone_run"]), load_run(out, row["vs_cubic_run"])
        mine = alone.flows[alone.flows["group"] == "scheme"]
        assert len(mine) == 1 and mine["cc"].iloc[0] == row["scheme"].split("+")[0]
        assert row["goodput_bps"] == pytest.approx(mine["goodput_bps"].sum(), rel=1e-12)
        assert row["drops_pkts"] == alone.links["drops_pkts"].sum()
        per_group = alone.latency_per_group().set_index("group")
        assert row["rtt_p95_ms"] == pytest.approx(per_group.loc["scheme", "p95_ms"])
        g = vs.flows.set_index("group")["goodput_bps"]
        assert row["share"] == pytest.approx(g["scheme"] / (g["scheme"] + g["cubic"]))
        assert 0 < row["share"] < 1
        assert alone.run_info["seed"] == row["seed"]
    assert (
        seeds["drops_pkts"].max() > 0
    )  # a 30 kB buffer under CUBIC: the drops compared are not all 0
    for _, t in table.iterrows():
        s = seeds[seeds["scheme"] == t["scheme"]]
        assert t["goodput_mean_bps"] == pytest.approx(s["goodput_bps"].mean())
        assert t["goodput_min_bps"] == pytest.approx(s["goodput_bps"].min())
        assert t["share_max"] == pytest.approx(s["share"].max())
        assert t["drops_mean_pkts"] == pytest.approx(s["drops_pkts"].mean())
        assert s["rtt_p50_ms"].min() * 0.97 <= t["rtt_p50_ms"] <= s["rtt_p50_ms"].max() * 1.03
    # the table the command printed shows the file's numbers
    first = table.iloc[0]
    assert f"{first['goodput_mean_bps'] / 1e6:.2f}" in output
    numbers = json.loads((out / "compare.json").read_text())
    assert [s["scheme"] for s in numbers["schemes"]] == list(table["scheme"])
    assert len(numbers["per_seed"]) == 4


def test_figures_are_written(compared):
    tmp, _, _ = compared
    for name in ("plane.png", "rtt.png"):
        data = (tmp / "cli" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_api_and_cli_agree(compared):
    tmp, path, _ = compared
    table = compare_runner.run(path, tmp / "api", jobs=2, progress=False)
    from_cli = pd.read_csv(tmp / "cli" / "table.csv")
    from_api = pd.read_csv(tmp / "api" / "table.csv")
    pd.testing.assert_frame_equal(from_cli, from_api)
    assert list(table["scheme"]) == list(from_cli["scheme"])
    assert table["goodput_mean_bps"].tolist() == pytest.approx(
        from_cli["goodput_mean_bps"].tolist()
    )


def test_ellipse_is_one_sigma_of_the_points():
    import numpy as np

    from latlab.compare.figures import covariance_ellipse

    x = np.array([10.0, 12.0, 14.0])
    y = np.array([5.0, 5.0, 5.0])
    cx, cy, w, h, angle = covariance_ellipse(x, y)
    assert (cx, cy) == (12.0, 5.0)
    assert w == pytest.approx(2 * np.std(x, ddof=1)) and h == pytest.approx(0.0)
    assert angle % 180 == pytest.approx(0.0)
    assert covariance_ellipse(x[:1], y[:1]) is None


def test_an_ecn_scheme_is_checked_by_the_core(core):
    """Until the scenario schema takes ECN, a scheme with ecn = true is refused before any run,
    naming the scheme's ecn key; once it does, the scheme's scenarios validate."""
    spec = spec_of(SMALL.replace('queue = "codel"', 'queue = "codel"\necn = true'))
    try:
        translate.check(spec)
    except CompareError as e:
        assert "schemes[1].ecn:" in str(e) and "no ECN keys yet" in str(e)
        assert "(line " not in str(e)
