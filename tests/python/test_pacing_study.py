"""The pacing study (latlab.studies.pacing): builders, topology, analysis curves, a tiny end-to-end run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from latlab.models import edge_pacer as model
from latlab.studies import pacing
from latlab.studies.pacing import cases as ex


def _core():
    pytest.importorskip("latlab._core")
    import latlab

    return latlab


# ----- analysis curves (hand values) ---------------------------------------------------------


def test_burstiness_hand_value():
    # β = 1/sqrt(2λd): λ = 1000 packets/s, d = 10 ms → 1/sqrt(20)
    assert model.burstiness(1000.0, 0.01) == pytest.approx(1 / math.sqrt(20))


def test_loss_bound_hand_values():
    # (0.5·e^0.5)^(2·2) = 0.8243606^4 = 0.461816
    assert model.loss_bound(0.5, 2) == pytest.approx((0.5 * math.exp(0.5)) ** 4)
    assert model.loss_bound(0.5, 2) == pytest.approx(0.461816, rel=1e-5)
    assert model.loss_bound(1.0, 50) == pytest.approx(1.0)  # no smoothing gain at full load
    assert model.loss_bound(0.9, 0) == pytest.approx(1.0)


def test_relative_throughput_light_vs_heavy_load():
    rtt0 = 0.25 / model.packet_time_s(100e6)  # 3125 packet times
    assert model.packet_time_s(100e6) == pytest.approx(80e-6)
    d = np.array([0.0, 125.0])  # 10 ms
    light = model.relative_throughput(0.9, d, rtt0)
    heavy = model.relative_throughput(0.999, d, rtt0)
    assert light[0] == pytest.approx(1.0)
    # λ = 0.9: x = 0.9·e^0.1 = 0.994654; T(125)/T(0) = 3125 / (3250 · x^125)
    assert light[1] == pytest.approx(3125 / (3250 * (0.9 * math.exp(0.1)) ** 125), rel=1e-9)
    assert light[1] > 1 > heavy[1]


def test_offered_load_and_fit():
    assert model.offered_load(2000.0, 2000.0) == pytest.approx(1 - math.exp(-1))
    b = np.array([1e3, 2e3, 5e3, 1e4, 5e4])
    assert model.fit_b_star(b, model.offered_load(b, 2500.0)) == pytest.approx(2500.0, rel=0.01)


# ----- the two-level dumbbell --------------------------------------------------------------------


def test_two_level_dumbbell_structure_and_rtts():
    topo = ex.two_level_dumbbell(seed=3)
    names = {n["name"] for n in topo["nodes"]}
    assert len(names) == len(topo["nodes"]) == 2 * 1000 + 2 * 10 + 2
    # one-way links: duplex links count twice
    n_links = sum(2 if lk["duplex"] else 1 for lk in topo["links"])
    assert n_links == 2 + 10 * 4 + 1000 * 4
    lo, hi = ex.rtt_range_ms(topo)
    assert (
        224.0 <= lo < 245.0 and 260.0 < hi <= 280.0
    )  # within the study's 224–280 ms, spread over it
    again = ex.two_level_dumbbell(seed=3)
    assert again == topo  # drawn from the seed
    assert ex.two_level_dumbbell(seed=4) != topo


def test_pacer_only_on_ingress_links():
    topo = ex.two_level_dumbbell(
        seed=1, edges=3, hosts_per_edge=2, ingress_queues=[ex.edge_pacer(10), None, None]
    )
    pacers = [
        (lk["from"], lk["to"])
        for lk in topo["links"]
        if lk.get("queue", {}).get("kind") == "edge-pacer"
    ]
    assert pacers == [("ie0", "c0")]
    back = [lk for lk in topo["links"] if (lk["from"], lk["to"]) == ("c0", "ie0")]
    assert len(back) == 1 and not back[0]["duplex"] and "queue" not in back[0]


def test_custom_matches_edge_dumbbell():
    latlab = _core()
    spec = {
        "kind": "edge-dumbbell",
        "edges": 2,
        "hosts_per_edge": 3,
        "access_rate_bps": [8e6, 12e6],
        "access_delay_ms": [1, 5],
        "edge_rate_bps": 100e6,
        "edge_delay_ms": [5, 15],
        "core_rate_bps": 100e6,
        "core_delay_ms": 100,
    }
    common = {"duration_s": 0.01, "sample_interval_ms": 0}
    built = latlab.run(latlab.Scenario.from_dict({**common, "topology": spec})).links
    ours = latlab.run(
        latlab.Scenario.from_dict(
            {**common, "topology": ex.two_level_dumbbell(1, edges=2, hosts_per_edge=3)}
        )
    ).links
    assert sorted(built["name"]) == sorted(ours["name"])
    for frame in (built, ours):
        by = frame.set_index("name")
        assert by.loc["c0->c1", "delay_ns"] == 100_000_000
        assert 5e6 <= by.loc["ie1->c0", "delay_ns"] <= 15e6
        assert 8e6 <= by.loc["s4->ie1", "rate_bps"] <= 12e6


# ----- scenario builders ----------------------------------------------------------------------------


def _small(r: ex.Run) -> ex.Run:
    import dataclasses

    hosts = 2
    return dataclasses.replace(r, flows=r.edges * hosts, duration_s=4.0, measure_from_s=2.0)


def test_every_experiment_builds_valid_scenarios():
    latlab = _core()
    tiny = ex.Settings(
        duration_s=4.0,
        measure_from_s=2.0,
        buffers_kb=(5,),
        other_buffers_kb=(5,),
        delays_ms=(0, 10),
        delay_buffers_kb=(5,),
        delay_set_ms=(10,),
        experiments=ex.ALL_EXPERIMENTS,
        b_flows=(100,),
        udp_patterns=("poisson", "lrd"),
        j_fractions=(0.3,),
        j_buffers_kb=(5,),
    )
    seen = set()
    for exp in ex.ALL_EXPERIMENTS:
        runs = ex.runs_of(exp, tiny)
        assert runs, exp
        for r in runs:
            key = (exp, r.mode, r.udp, r.paced_fraction, r.workload)
            if key in seen:
                continue
            seen.add(key)
            latlab.Scenario.from_dict(_small(r).scenario()).validate()


def test_builder_details():
    host = ex.Run("J", "host-paced", 5, paced_fraction=0.3).scenario()
    assert [(f["name"], f["count"], f["first_index"]) for f in host["flows"]] == [
        ("paced", 300, 0),
        ("unpaced", 700, 300),
    ]
    assert host["flows"][0]["tcp"]["pacing"] is True and "tcp" not in host["flows"][1]
    edge = ex.Run("J", "edge-paced", 5, paced_fraction=0.3).scenario()
    pacers = [
        lk["from"]
        for lk in edge["topology"]["links"]
        if lk.get("queue", {}).get("kind") == "edge-pacer"
    ]
    assert pacers == ["ie0", "ie1", "ie2"]
    g = ex.Run("G", "unpaced", 5, core_kind="red").scenario()
    core = g["topology"]["links"][0]
    assert core["queue"] == {
        "kind": "red",
        "limit_bytes": 5000,
        "min_th": 2.0,
        "max_th": 5,
        "max_p": 0.1,
        "w_q": 0.002,
        "wait": True,
    }
    nowait = ex.runs_of("G-wait", pacing.FULL)
    assert {r.buffer_kb for r in nowait} == {5.0, 10.0} and len(nowait) == 2 * 3
    assert nowait[0].scenario()["topology"]["links"][0]["queue"]["wait"] is False
    with pytest.raises(ValueError, match="core_kind"):
        ex.Run("G", "unpaced", 5, core_kind="blue").scenario()
    a = ex.Run("A", "host-paced", 3).scenario()
    assert a["tcp"]["pacing"] and a["tcp"]["pacing_ss_factor"] == 1.0
    assert a["topology"]["links"][0]["queue"] == {"kind": "droptail", "limit_bytes": 3000}
    e = {r.recovery for r in ex.runs_of("E", pacing.FULL)}
    assert e == {"sack", "fack"}
    assert ex.Run("E", "unpaced", 5, recovery="fack").scenario()["tcp"]["recovery"] == "fack"
    seeds = ex.runs_of("A-seeds", pacing.FULL)
    assert {(r.seed, r.buffer_kb) for r in seeds} == {(2, 5.0), (3, 5.0)} and len(seeds) == 3 * 2
    # the same set-up under two experiments is one scenario (one run id)
    assert ex.Run("A", "unpaced", 5).scenario() == ex.Run("J", "unpaced", 5).scenario()


def test_k_runs_bbr_senders_in_their_own_pacing_and_behind_the_edge_pacer():
    k = ex.runs_of("K", pacing.QUICK)
    assert {(r.mode, r.cc) for r in k} == {("host-paced", "bbr"), ("edge-paced", "bbr")}
    assert {r.buffer_kb for r in k} == set(pacing.QUICK.other_buffers_kb)
    own = ex.Run("K", "host-paced", 5, cc="bbr").scenario()
    # BBR paces at its own rate: no cwnd/RTT host pacing on top, and no edge pacer
    assert {f["cc"] for f in own["flows"]} == {"bbr"} and "pacing" not in own["tcp"]
    assert not [lk for lk in own["topology"]["links"] if "edge-pacer" in str(lk.get("queue"))]
    edge = ex.Run("K", "edge-paced", 5, cc="bbr").scenario()
    assert (
        len([lk for lk in edge["topology"]["links"] if "edge-pacer" in str(lk.get("queue"))]) == 10
    )
    assert own["name"] == "pacing-host-paced-5kB-bbr"
    # NewReno's scenarios keep their names, so A's runs (and their run ids) are unchanged
    assert ex.Run("A", "host-paced", 5).scenario()["name"] == "pacing-host-paced-5kB"
    with pytest.raises(ValueError, match="always paces itself"):
        ex.Run("K", "unpaced", 5, cc="bbr").scenario()
    with pytest.raises(ValueError, match="cc: expected one of"):
        ex.Run("K", "host-paced", 5, cc="vegas").scenario()


# ----- a tiny end-to-end run --------------------------------------------------------------------------


def test_red_at_a_two_packet_core_is_droptail(tmp_path):
    """Issue: G equalled A to the last digit. The links table's early-drop counter shows why, and the note says so."""
    _core()
    from latlab.studies.pacing.report import _red_note

    runs = [
        _small(ex.Run(e, m, 2.0, core_kind=k))
        for e, k in (("A", "droptail"), ("G", "red"), ("G-wait", "red-nowait"))
        for m in ex.MODES
    ]
    table = pacing.run_study(runs, tmp_path, jobs=1, progress=False)
    assert (table["status"] == "ok").all()
    g, a = table[table["experiment"] == "G"], table[table["experiment"] == "A"]
    assert (g["core_early_drops_pkts"] == 0).all() and (a["core_early_drops_pkts"] == 0).all()
    assert g["core_drops_pkts"].tolist() == a["core_drops_pkts"].tolist()
    assert g["per_flow_kbps"].tolist() == a["per_flow_kbps"].tolist()
    note = _red_note(table)
    assert "Why RED is DropTail here" in note and "| 2 KB (2 pkt) | 3 of 3 |" in note


def test_tiny_end_to_end(tmp_path):
    _core()
    runs = [_small(ex.Run("A", m, 5.0)) for m in ex.MODES] + [
        _small(ex.Run("I", "edge-paced", 5.0, udp="poisson"))
    ]
    table = pacing.run_study(runs, tmp_path, jobs=1, progress=False)
    assert (table["status"] == "ok").all()
    assert (table["per_flow_kbps"] > 0).all()
    assert table["core_loss"].between(0, 1).all()
    assert table.loc[3, "udp_loss"] >= 0
    again = pacing.run_study(runs, tmp_path, jobs=1, progress=False)  # resumable: nothing re-run
    assert again["per_flow_kbps"].tolist() == table["per_flow_kbps"].tolist()


def test_udp_loss_is_over_the_window_in_payload_bytes():
    import pandas as pd

    from latlab.studies.pacing.metrics import udp_window_loss

    # sent and received over the window (bits/s over the same window): 1 % lost
    udp = pd.DataFrame({"throughput_bps": [5.5e6], "goodput_bps": [5.445e6]})
    assert abs(udp_window_loss(udp) - 0.01) < 1e-12
    assert (
        udp_window_loss(pd.DataFrame({"throughput_bps": [0.0], "goodput_bps": [0.0]})) != 0.0
    )  # NaN


def test_findings_read_curves_between_grid_points():
    import numpy as np
    import pandas as pd

    from latlab.studies.pacing.findings import buffer_for, read_at

    curve = pd.Series({2.0: 80.0, 5.0: 88.0, 10.0: 92.0})
    assert buffer_for(curve, 90.0) == 7.5
    assert buffer_for(curve, 70.0) == 2.0 and np.isnan(buffer_for(curve, 95.0))
    assert read_at(curve, 6.0) == 88.8 and np.isnan(read_at(curve, 20.0))


def test_d_iw_reruns_d_with_a_small_initial_window():
    from latlab.studies.pacing.cases import FULL, all_runs

    runs = [r for r in all_runs(FULL) if r.experiment == "D-iw"]
    assert {r.mode for r in runs} == {"unpaced", "host-paced", "edge-paced"}
    for r in runs:
        sc = r.scenario()
        assert (
            sc["tcp"]["initial_window_segments"] == FULL.d_iw_segments
            and "closed_loop" in sc["flows"][0]
        )
    # the other runs keep the preset's window, so their run ids (scenario hashes) do not change
    assert all("initial_window_segments" not in r.scenario()["tcp"] for r in all_runs(FULL)[:5])
