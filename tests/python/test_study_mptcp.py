"""The MPTCP-proxy study (latlab.studies.mptcp): the testbed and scenario builders and their errors, the verdict
rules on synthetic rows, and the quick reproduction end to end (files, figures, verdict structure)."""

from __future__ import annotations

import importlib
import re

import numpy as np
import pandas as pd
import pytest

from latlab.studies import mptcp
from latlab.studies._verdict import OUTCOMES
from latlab.studies.mptcp import cases as C
from latlab.studies.mptcp.references import REFERENCES

V = importlib.import_module("latlab.studies.mptcp.verdicts")

# ----- cases ------------------------------------------------------------------------------------------


def test_runs_cover_every_experiment_with_the_proxy_and_skip_the_proxy_ones_without():
    with_proxy = mptcp.runs_of(C.QUICK, proxy=True)
    assert {r.experiment for r in with_proxy} == set(C.EXPERIMENTS)
    sweep = {r.buffer_mb for r in with_proxy if r.experiment == "rbuf"}
    assert set(C.STUDY_BUFFERS_MB) <= sweep and set(C.QUICK.buffers_mb) <= sweep
    # the buffer and MTU experiments run with both senders, everything else with the RFC one
    assert {
        r.data_window
        for r in with_proxy
        if r.experiment in ("rbuf", "mtu") and r.transport == "mptcp"
    } == {True, False}
    assert all(r.data_window for r in with_proxy if r.experiment not in ("rbuf", "mtu"))
    assert {r.label for r in with_proxy if r.experiment == "throttle"} == {
        "first",
        "repeated",
        "long",
    }
    assert {(r.path, r.size_bytes) for r in with_proxy if r.experiment == "baseline"} == {
        (p, s) for p in C.PATHS for s in (C.QUICK.large_bytes, C.QUICK.small_bytes)
    }
    without = mptcp.runs_of(C.QUICK, proxy=False)
    assert {r.experiment for r in without} == set(C.EXPERIMENTS) - {"throttle", "conversion"}
    assert all(not r.proxy for r in without if r.transport == "mptcp")
    assert len(mptcp.runs_of(C.FULL)) > len(with_proxy)


def test_testbed_and_scenario_details():
    # 802.11g with the DCF's costs and the TCP ACKs' airtime folded in: about 25 and 20 Mbit/s of IP packets
    assert C.wifi_rate_bps(1500) == pytest.approx(25.1e6, rel=0.01)
    assert C.wifi_rate_bps(1000) == pytest.approx(19.8e6, rel=0.01)
    assert C.path_rate_bps("wired") == C.ETHERNET_BPS and C.path_rate_bps("wifi") < C.path_rate_bps(
        "wired"
    )
    mp = C.Run("mptcp", "mptcp", 5 * C.MB).scenario()
    names = {n["name"] for n in mp["topology"]["nodes"]}
    assert names == {C.SERVER, C.PROXY, C.SWITCH, C.AP, C.CLIENT}
    assert mp["topology"]["aps"][0]["stations"] == [{"node": C.CLIENT}]
    flow = mp["flows"][0]
    assert flow["kind"] == "mptcp" and flow["cc"] == "lia" and flow["size_bytes"] == 5 * C.MB
    table = flow["mptcp"]
    # 0.72 MB of max TCP memory advertises half of it
    assert (
        table["recv_buffer_bytes"] == 360_000
        and table["scheduler"] == "minrtt"
        and table["enforce_data_window"]
    )
    assert [(p["name"], p["via"]) for p in table["paths"]] == [
        ("wired", [C.SWITCH]),
        ("wifi", [C.AP]),
    ]
    assert table["proxy"]["syn_delay_ms"] == 7.8 and table["proxy"]["data_delay_ms"] == 15.3
    assert "throttle" not in table["proxy"]
    thr = C.Run("throttle", "mptcp", 5 * C.MB, throttle_bps=50e6, throttle_after_s=0.2).scenario()
    t = thr["flows"][0]["mptcp"]["proxy"]["throttle"]
    assert t == {"path": "wired", "rate_bps": 50e6, "after_s": 0.2, "queue_bytes": 312_500}
    e2e = C.Run("mptcp", "mptcp", 5 * C.MB, proxy=False).scenario()
    assert "proxy" not in e2e["flows"][0]["mptcp"]
    # a single-path baseline brings only one of the client's interfaces up
    wifi = C.Run("baseline", "tcp", 5 * C.MB, path="wifi").scenario()
    assert {n["name"] for n in wifi["topology"]["nodes"]} == {C.SERVER, C.PROXY, C.AP, C.CLIENT}
    wired = C.Run("baseline", "tcp", 5 * C.MB, path="wired").scenario()
    assert "aps" not in wired["topology"] and wired["flows"][0]["kind"] == "tcp"
    small = C.Run("mtu", "mptcp", 5 * C.MB, mtu_bytes=1000).scenario()
    assert small["tcp"]["mss_bytes"] == 948
    assert small["topology"]["aps"][0]["rate"]["constant_bps"] == pytest.approx(
        C.wifi_rate_bps(1000)
    )
    # the run lasts long enough for the transfer at the slowest rate it can meet
    assert C.Run("baseline", "tcp", 200 * C.MB, path="wifi").duration_s * 12e6 / 8 > 200 * C.MB


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"experiment": "burst"}, "experiment: expected one of"),
        ({"transport": "quic"}, "transport: expected"),
        ({"transport": "tcp", "path": "both"}, "path: a single-path run"),
        ({"path": "wired"}, "path: an MPTCP run uses both paths"),
        ({"size_bytes": 0}, "size_bytes"),
        ({"buffer_mb": 0.0}, "buffer_mb"),
        ({"mtu_bytes": 100}, "mtu_bytes"),
        ({"throttle_bps": 1e6, "proxy": False}, "throttling is the proxy's"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, words):
    args = {"experiment": "mptcp", "transport": "mptcp", "size_bytes": C.MB, **kwargs}
    with pytest.raises(ValueError, match=re.escape(words)):
        C.Run(**args)


# ----- verdict rules on synthetic rows ------------------------------------------------------------------

S = C.QUICK


def _row(experiment: str, transport: str = "mptcp", size: int = S.large_bytes, **kw) -> dict:
    base = {
        "experiment": experiment,
        "transport": transport,
        "path": "both",
        "size_bytes": size,
        "buffer_mb": C.DEFAULT_BUFFER_MB,
        "mtu_bytes": 1500,
        "throttle_bps": 0.0,
        "throttle_after_s": 0.0,
        "proxy": True,
        "conversion": True,
        "data_window": True,
        "seed": 1,
        "label": "",
        "goodput_bps": 90e6,
        "fct_s": 1.0,
        "wired_share": 0.95,
        "wifi_share": 0.05,
        "srtt_wired_ms": 3.0,
        "srtt_wifi_ms": 20.0,
        "retransmits": 0,
        "recv_drops": 0,
        "reinjections": 0,
        "hol_fraction": 0.01,
    }
    base.update(kw)
    return base


def _study(
    wired_share=0.95,
    small_buffer_gp=60e6,
    small_buffer_retx=30,
    throttled_gp=75e6,
    throttled_wifi=0.3,
    mtu_gp=80e6,
    conv_fct=(0.050, 0.073),
) -> pd.DataFrame:
    rows = [
        _row(
            "baseline",
            "tcp",
            path="wired",
            goodput_bps=70e6,
            wired_share=1.0,
            wifi_share=float("nan"),
        ),
        _row(
            "baseline",
            "tcp",
            path="wifi",
            goodput_bps=23e6,
            wired_share=float("nan"),
            wifi_share=1.0,
        ),
        _row("mptcp", wired_share=wired_share, wifi_share=1 - wired_share),
        _row("mptcp", size=S.small_bytes),
    ]
    for dw in C.SENDERS:
        for mb in S.buffers_mb:
            gp = small_buffer_gp if mb <= 0.18 else 90e6
            rows.append(
                _row(
                    "rbuf",
                    size=S.sweep_bytes,
                    buffer_mb=mb,
                    goodput_bps=gp,
                    data_window=dw,
                    retransmits=small_buffer_retx if mb <= 0.18 else 0,
                    recv_drops=0 if dw or mb > 0.18 else small_buffer_retx,
                    hol_fraction=0.5 if mb <= 0.18 else 0.01,
                )
            )
        rows.append(
            _row("mtu", size=S.sweep_bytes, mtu_bytes=1000, goodput_bps=mtu_gp, data_window=dw)
        )
    rows.append(
        _row(
            "throttle",
            size=S.small_bytes,
            label="repeated",
            throttle_bps=50e6,
            wifi_share=throttled_wifi,
        )
    )
    rows.append(
        _row(
            "throttle",
            label="long",
            throttle_bps=50e6,
            goodput_bps=throttled_gp,
            wifi_share=throttled_wifi,
            wired_share=1 - throttled_wifi,
        )
    )
    rows += [
        _row("conversion", size=S.object_bytes, conversion=c, fct_s=f)
        for c, f in zip((False, True), conv_fct)
    ]
    return pd.DataFrame(rows)


def test_verdicts_agree_where_the_runs_look_like_the_study():
    vs = V.verdicts(_study(), S)
    assert set(vs) == set(REFERENCES)
    for key in (
        "mptcp_wired_share",
        "mptcp_wifi_share",
        "rbuf_large",
        "mtu_small",
        "throttle_small_shift",
        "throttle_long_shift",
        "throttle_long_total",
        "throttle_long_vs_tcp",
        "rbuf_small",
        "rbuf_small_sfwin",
        "rbuf_large_sfwin",
        "mtu_small_sfwin",
        "rbuf_suffices",
    ):
        assert vs[key].outcome == "agrees", vs[key].sentence()
    assert vs["rbuf_needed"].measured.startswith("0.36 MB") and vs[
        "rbuf_needed_sfwin"
    ].measured.startswith("0.36 MB")
    # 2 × (70 + 23) Mbit/s × 20 ms
    assert (
        vs["rbuf_guidance"].measured.startswith("0.47 MB")
        and vs["rbuf_guidance"].outcome == "agrees"
    )
    for v in vs.values():
        assert v.sentence().endswith(".") and v.reference.quantity.split(":")[0] in v.sentence()
    # the study's conversion delays are set in latlab's proxy: an input, never an agreement
    assert vs["conversion"].outcome == "input" and "agree" not in vs["conversion"].sentence()


def test_verdicts_differ_where_the_runs_do_not():
    vs = V.verdicts(
        _study(
            wired_share=0.3,
            small_buffer_gp=90e6,
            small_buffer_retx=0,
            throttled_gp=100e6,
            throttled_wifi=0.05,
            mtu_gp=95e6,
            conv_fct=(0.050, 0.050),
        ),
        S,
    )
    for key in (
        "mptcp_wired_share",
        "mptcp_wifi_share",
        "rbuf_small",
        "mtu_small",
        "throttle_long_shift",
        "throttle_long_total",
        "rbuf_small_sfwin",
        "mtu_small_sfwin",
    ):
        assert vs[key].outcome == "differs", vs[key].sentence()
    assert vs["conversion"].outcome == "input"
    # nothing degrades: the smallest buffer of the grid is already stable
    assert vs["rbuf_needed"].measured.startswith(f"{min(S.buffers_mb):g} MB")


# ----- the quick reproduction --------------------------------------------------------------------------


def test_quick_reproduction_writes_the_report_figures_and_verdicts(core, tmp_path):
    if not C.supports("mptcp"):
        pytest.skip("this build's simulator has no MPTCP flows")
    report = mptcp.reproduce_with(C.QUICK, tmp_path, jobs=1, quick=True, progress=False)
    text = report.read_text()
    for name in ("connections", "subflow_series", "runs"):
        assert (tmp_path / f"{name}.parquet").is_file()
    runs = pd.read_parquet(tmp_path / "runs.parquet")
    assert (runs["status"] == "ok").all()
    conns = pd.read_parquet(tmp_path / "connections.parquet")
    assert len(conns) == len(runs) and conns["completed"].all()
    # every figure the report links sits beside it
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", text)
    assert {"fig_paths.png", "fig_buffer.png", "fig_mtu.png"} <= set(links)
    for link in links:
        assert "/" not in link and (tmp_path / link).is_file()
    # the verdict table: one row per judged reference, each with an outcome, and a count that matches
    rows = [
        line
        for line in text.splitlines()
        if line.startswith("| ") and line.rstrip().endswith("** |")
    ]
    outcomes = [re.search(r"\*\*(\w+)\*\* \|$", line.rstrip()).group(1) for line in rows]
    assert outcomes and set(outcomes) <= set(OUTCOMES)
    n = {o: outcomes.count(o) for o in OUTCOMES}
    assert f"{n['agrees']} agree, {n['partly']} partly, {n['differs']} differ" in text
    expected = {
        "mptcp_wired_share",
        "mptcp_wifi_share",
        "rbuf_guidance",
        "rbuf_small",
        "rbuf_large",
        "rbuf_needed",
        "rbuf_suffices",
        "mtu_small",
        "rbuf_small_sfwin",
        "rbuf_large_sfwin",
        "rbuf_needed_sfwin",
        "rbuf_suffices_sfwin",
        "mtu_small_sfwin",
    }
    if C.supports("proxy"):
        expected |= {
            "throttle_small_shift",
            "throttle_long_shift",
            "throttle_long_total",
            "throttle_long_vs_tcp",
            "conversion",
        }
        assert "fig_throttle.png" in links
    else:
        assert "has no proxy node" in text
    assert len(rows) >= len(expected)
    for key in expected:
        assert REFERENCES[key].quantity in text
    # the report stands alone: no path outside the repository
    assert "../shared" not in text and "specs/" not in text


def test_smallest_stable_buffer_needs_every_seed_and_every_larger_size():
    from latlab.studies.mptcp.metrics import (
        buffer_curve,
        smallest_stable_mb,
        stable_pockets,
        stable_sizes,
    )

    # 0.12 MB collapses; 0.18 MB is good in both seeds; 0.24 MB collapses in one seed; from 0.30 MB on all is good
    goodput = {0.12: (20e6, 25e6), 0.18: (95e6, 95e6), 0.24: (95e6, 40e6), 0.30: (95e6, 94e6)}
    goodput[0.36] = goodput[0.30]
    rows = [
        _row("rbuf", buffer_mb=mb, seed=seed, goodput_bps=gp, recv_drops=0 if gp > 9e7 else 400)
        for mb, pair in goodput.items()
        for seed, gp in zip((1, 2), pair)
    ]
    curve = buffer_curve(pd.DataFrame(rows), True)
    assert list(stable_sizes(curve)) == [False, True, False, True, True]
    assert smallest_stable_mb(curve) == 0.30 and stable_pockets(curve) == [0.18]
    # drops keep their range over seeds
    assert (curve.loc[0.24, "recv_drops_lo"], curve.loc[0.24, "recv_drops_hi"]) == (0, 400)
    # the largest size failing in one seed: no size is stable from some point on
    rows = [r for r in rows if r["buffer_mb"] != 0.36]
    rows[-1]["goodput_bps"] = 50e6
    assert np.isnan(smallest_stable_mb(buffer_curve(pd.DataFrame(rows), True)))
