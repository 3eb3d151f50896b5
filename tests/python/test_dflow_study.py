"""The DFlow study (latlab.studies.dflow): the TCP equation and Jain's index by hand, the scenario builders,
behaviour on short simulations, determinism, and a tiny end-to-end reproduction."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from latlab.studies import dflow

# ----- the TCP equation (RFC 5348 §3.1) --------------------------------------------------------


def test_equation_matches_a_hand_computed_point():
    # s = 1200 B, R = 120 ms, p = 0.01, b = 1, t_RTO = 4R = 0.48 s:
    #   R·sqrt(2p/3)                        = 0.12 · 0.0816497 = 0.00979796 s
    #   t_RTO·3·sqrt(3p/8)·p·(1 + 32p²)     = 0.48 · 0.1837117 · 0.01 · 1.0032 = 0.00088464 s
    #   X = 1200 B / 0.01068260 s = 112 332 B/s = 898 658 bit/s
    assert dflow.tcp_equation_rate_bps(0.01, 0.12) == pytest.approx(898_657.87, rel=1e-6)
    # twice the segment size, twice the rate; twice the RTT (and t_RTO with it), half the rate
    assert dflow.tcp_equation_rate_bps(0.01, 0.12, segment_bytes=2400) == pytest.approx(
        2 * 898_657.87, rel=1e-6
    )
    assert dflow.tcp_equation_rate_bps(0.01, 0.24) == pytest.approx(898_657.87 / 2, rel=1e-6)


def test_equation_falls_with_p_and_tends_to_the_square_root_law():
    p = np.logspace(-6, 0, 200)
    x = dflow.tcp_equation_rate_bps(p, 0.12)
    assert np.all(np.diff(x) < 0)
    # small p: the timeout term vanishes and X → s / (R·sqrt(2p/3))
    simple = 8 * 1200 / (0.12 * math.sqrt(2e-6 / 3))
    assert float(dflow.tcp_equation_rate_bps(1e-6, 0.12)) == pytest.approx(simple, rel=1e-3)
    # p = 1: far below the square-root law (the timeout term dominates)
    assert float(dflow.tcp_equation_rate_bps(1.0, 0.12)) < 0.01 * 8 * 1200 / (
        0.12 * math.sqrt(2 / 3)
    )


def test_knee_and_elasticity():
    knee = dflow.knee_loss_event_rate()
    assert knee + 32 * knee**3 == pytest.approx(1 / 9, rel=1e-9)
    assert knee == pytest.approx(0.0887, abs=1e-4)
    # at the knee the two terms of the denominator are equal, for any R
    for rtt in (0.05, 0.12, 0.3):
        first = rtt * math.sqrt(2 * knee / 3)
        second = 4 * rtt * 3 * math.sqrt(3 * knee / 8) * knee * (1 + 32 * knee**2)
        assert first == pytest.approx(second, rel=1e-9)
    # elasticity: 1/2 on the square-root branch, above 1 at the knee, and it matches a numerical derivative
    assert float(dflow.equation_elasticity(1e-6)) == pytest.approx(0.5, abs=1e-3)
    assert float(dflow.equation_elasticity(knee)) > 1.0
    p, h = 0.03, 1e-6
    numeric = -(
        math.log(dflow.tcp_equation_rate_bps(p * (1 + h), 0.12))
        - math.log(dflow.tcp_equation_rate_bps(p, 0.12))
    )
    assert float(dflow.equation_elasticity(p)) == pytest.approx(numeric / math.log(1 + h), rel=1e-4)
    unstable = dflow.unstable_loss_event_rate()
    assert float(dflow.equation_elasticity(unstable)) == pytest.approx(1.0, abs=1e-6)
    assert 0.05 < unstable < knee


def test_loss_event_rate_for_inverts_the_equation():
    for rate in (2e6, 1e6, 4e5, 1e4):
        p = dflow.loss_event_rate_for(rate, 0.12)
        assert float(dflow.tcp_equation_rate_bps(p, 0.12)) == pytest.approx(rate, rel=1e-6)
    assert dflow.loss_event_rate_for(1.0, 0.12) == 1.0  # below the rate at p = 1: clamp


# ----- Jain's index -----------------------------------------------------------------------------


def test_jain_index_properties():
    assert dflow.jain_index([5.0, 5.0, 5.0]) == pytest.approx(1.0)
    assert dflow.jain_index([7.0, 0.0, 0.0, 0.0]) == pytest.approx(1 / 4)
    x = [1.0, 2.0, 3.0]
    assert dflow.jain_index(x) == pytest.approx(36 / (3 * 14))  # (Σx)² / (n·Σx²)
    assert dflow.jain_index(np.array(x) * 1e6) == pytest.approx(dflow.jain_index(x))  # scale-free
    rng = np.random.default_rng(0)
    for _ in range(50):
        v = rng.exponential(size=int(rng.integers(1, 10)))
        assert 1 / v.size - 1e-12 <= dflow.jain_index(v) <= 1 + 1e-12
    assert math.isnan(dflow.jain_index([]))
    assert math.isnan(dflow.jain_index([0.0, 0.0]))


# ----- scenario builders -------------------------------------------------------------------------


def test_path_constants():
    assert dflow.FULL_QUEUE_DELAY_S == pytest.approx(35 * 1244 * 8 / 2e6)  # 174.16 ms
    assert dflow.RTT_S == pytest.approx(0.120)
    assert (
        dflow.TCP_MSS_BYTES + dflow.TCP_HEADER_BYTES
        == dflow.SEGMENT_BYTES + dflow.TFRC_HEADER_BYTES
    )


def test_runs_of_counts_and_dedupes_tfrc():
    runs = dflow.runs_of(dflow.FULL)
    # every case under the primary base period, the four DFlow cases under each other one (TFRC has no base period)
    assert len(runs) == len(dflow.FULL.seeds) * (5 + 4 * (len(dflow.FULL.variants) - 1))
    assert dflow.PRIMARY in dflow.FULL.variants and dflow.VARIANTS[dflow.PRIMARY] == 10_000
    assert {r.case for r in runs} == set(dflow.CASES)
    quick = dflow.runs_of(dflow.QUICK)
    assert all(r.duration_s == 120.0 for r in quick) and len(quick) < len(runs)
    # TFRC's scenario does not depend on the variant, so a variant run of it would be the same run id
    assert dflow.Run("tfrc", "base10").scenario() == dflow.Run("tfrc", "base1000").scenario()
    assert dflow.Run("dflow", "base10").scenario() != dflow.Run("dflow", "base1000").scenario()
    # the primary base period runs even when the settings leave it out
    only10 = dflow.runs_of(
        dflow.Settings(duration_s=20.0, measure_from_s=5.0, seeds=(1,), variants=("base10",))
    )
    assert {(r.case, r.variant) for r in only10 if r.case == "tfrc"} == {("tfrc", dflow.PRIMARY)}
    assert len(only10) == 5 + 4


def test_builder_details():
    sc = dflow.Run("vegas", "base10", seed=3).scenario()
    assert sc["seed"] == 3 and sc["topology"]["pairs"] == 2
    assert sc["topology"]["core_queue"] == {"kind": "droptail", "limit_packets": 35}
    assert sc["topology"]["core_rate_bps"] == 2e6
    d, v = sc["flows"]
    assert (
        d["kind"] == "dflow"
        and d["tfrc"]["cd_thresh_ms"] == 50.0
        and d["tfrc"]["base_period_rtts"] == 10.0
    )
    assert d["tfrc"]["gradient_test"] is False
    assert v["cc"] == "vegas" and v["cc_params"] == {"alpha": 1.0, "beta": 3.0, "gamma": 1.0}
    assert (
        v["tcp"]["mss_bytes"] + v["tcp"]["header_bytes"]
        == d["tfrc"]["segment_bytes"] + d["tfrc"]["header_bytes"]
    )
    assert (d["first_index"], v["first_index"]) == (0, 1)
    led = dflow.Run("ledbat").scenario()["flows"][1]
    assert led["cc_params"] == {"target_ms": 50.0}
    assert "cc_params" not in dflow.Run("newreno").scenario()["flows"][1]  # NewReno takes none
    five = dflow.Run("dflow").scenario()
    assert five["topology"]["pairs"] == 5 and five["flows"][0]["count"] == 5
    with pytest.raises(ValueError):
        dflow.Run("cubic").scenario()
    with pytest.raises(ValueError):
        dflow.Run("dflow", "base5").scenario()


def test_every_run_is_a_valid_scenario(core):
    from latlab import Scenario

    for r in dflow.runs_of(dflow.QUICK):
        Scenario.from_dict(r.scenario()).validate()


# ----- metric helpers -------------------------------------------------------------------------------


def test_delay_stats_weights_by_traffic():
    link = pd.DataFrame(
        {
            "time_s": [1.0, 2.0, 3.0, 4.0],
            "sojourn_ms": [100.0, 10.0, 30.0, 0.0],
            "sojourn_max_ms": [120.0, 12.0, 40.0, 0.0],
            "departed_bytes": [500.0, 1000.0, 3000.0, 0.0],
        }
    )
    s = dflow.delay_stats(link, measure_from_s=1.0)  # the interval ending at 1 s is warm-up
    assert s["delay_mean_ms"] == pytest.approx((10 * 1000 + 30 * 3000) / 4000)
    assert s["delay_max_ms"] == 40.0
    assert s["below_target"] == pytest.approx(1.0)
    assert s["delay_p95_ms"] == 30.0
    assert dflow.weighted_quantile(np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 8.0]), 0.5) == 3.0
    assert math.isnan(dflow.weighted_quantile(np.array([1.0]), np.array([0.0]), 0.5))


# ----- short simulations: behaviour and determinism -------------------------------------------------


def _short(case: str, seed: int = 1, duration_s: float = 25.0, measure_from_s: float = 8.0) -> dict:
    import latlab

    run = dflow.Run(case, seed=seed, duration_s=duration_s, measure_from_s=measure_from_s)
    res = latlab.run(latlab.Scenario.from_dict(run.scenario()))
    summary, flows, series, link = dflow.run_metrics(res, run)
    return {"summary": summary, "flows": flows, "series": series, "link": link}


def test_dflow_keeps_the_queue_short_and_tfrc_fills_it(core):
    d, t = _short("dflow"), _short("tfrc")
    ds, ts = d["summary"], t["summary"]
    assert ds["delay_mean_ms"] < 40.0 < 120.0 < ts["delay_mean_ms"]
    assert ts["delay_max_ms"] == pytest.approx(
        dflow.FULL_QUEUE_DELAY_S * 1e3, abs=1.0
    )  # TFRC fills the buffer
    assert ds["drops_window"] < ts["drops_window"] and ts["drops_window"] > 20
    assert ts["tfrc_loss_events"] > ds["dflow_loss_events"]
    assert ds["dflow_delay_events"] > 0  # DFlow's congestion signal is delay
    assert ts["utilisation"] > ds["utilisation"] > 0.8
    # the per-flow rates add up to the goodput, and the series' rates average to them
    assert d["flows"]["goodput_bps"].sum() == pytest.approx(ds["goodput_bps"])
    w = d["series"][d["series"]["time_s"] > 8.0 + 1e-9]
    mean_rate = w.groupby("flow_id")["rate_bps"].mean()
    assert np.allclose(
        mean_rate.sort_index().to_numpy(),
        d["flows"].sort_values("flow_id")["goodput_bps"].to_numpy(),
        rtol=0.02,
    )


def test_newreno_starves_dflow(core):
    # DFlow's p needs a few tens of seconds of delay events to climb past the knee
    s = _short("newreno", duration_s=50.0, measure_from_s=30.0)["summary"]
    assert s["dflow_rate_bps"] < 0.05 * s["rival_rate_bps"]
    assert s["delay_max_ms"] == pytest.approx(dflow.FULL_QUEUE_DELAY_S * 1e3, abs=2.0)


def test_same_seed_same_numbers(core):
    a, b, c = _short("ledbat", seed=2), _short("ledbat", seed=2), _short("ledbat", seed=3)
    # everything but the measured wall time (NaN-aware: Jain among DFlows is NaN with one DFlow)
    assert pd.Series(a["summary"]).drop("wall_s").equals(pd.Series(b["summary"]).drop("wall_s"))
    pd.testing.assert_frame_equal(a["series"], b["series"])
    assert (
        a["flows"]["start_s"].tolist() != c["flows"]["start_s"].tolist()
    )  # the seed draws the start times


# ----- a tiny end-to-end reproduction -----------------------------------------------------------------


def test_tiny_reproduction(core, tmp_path):
    tiny = dflow.Settings(
        duration_s=20.0, measure_from_s=5.0, seeds=(1,), variants=("base10", dflow.PRIMARY)
    )
    report = dflow.reproduce_with(tiny, tmp_path, jobs=1, progress=False)
    text = report.read_text()
    for name in ("results", "flows", "flow_series", "bottleneck_series", "knee"):
        assert (tmp_path / f"{name}.parquet").is_file()
    results = pd.read_parquet(tmp_path / "results.parquet")
    assert len(results) == 9 and (results["status"] == "ok").all()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert {
        "fig_dflow.png",
        "fig_tfrc.png",
        "fig_knee.png",
        "fig_summary.png",
        "fig_variant_base10.png",
        "fig_base_period.png",
    } <= set(links)
    for link in links:
        assert "/" not in link and (tmp_path / link).is_file()  # relative, next to the report
    assert "174.2 ms" in text and "## The knee" in text
    # resumable: a second call runs nothing and gives the same table
    dflow.reproduce_with(tiny, tmp_path, jobs=1, progress=False)
    again = pd.read_parquet(tmp_path / "results.parquet")
    pd.testing.assert_frame_equal(results.drop(columns=["wall_s"]), again.drop(columns=["wall_s"]))
