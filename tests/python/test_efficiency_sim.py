"""The efficiency study's simulator side: the exact model's cross-check, the loaded-RTT probes, the study module."""

import numpy as np
import pytest

import latlab
from latlab.models import latency, loaded_rtt, profiles, simcheck
from latlab.studies import efficiency


def test_study_is_registered():
    from latlab import studies

    assert studies.available()["efficiency"] is efficiency
    assert efficiency.NAME == "efficiency" and efficiency.DESCRIPTION


# Sizes around the IW boundary (10 full segments, then one byte more), a mid-sized and a large flow.
CHECK_SIZES = [1000, 14480, 14481, 100_000, 1_000_000]


@pytest.mark.parametrize("profile", ["3.5G", "4G"])
def test_exact_model_matches_the_simulator_within_one_segment_time(core, profile):
    c, r = profiles.load(profile).typical()
    flows = latlab.run(simcheck.lossless_scenario(CHECK_SIZES, c, r, iw=10)).flows
    ct = simcheck.completion_times(flows)
    assert ct["size_bytes"].tolist() == CHECK_SIZES
    assert (ct["retransmitted_segments"] == 0).all()
    model = simcheck.model_fct_s(ct["size_bytes"], c, r)
    err = np.abs(ct["fct_s"] - model) / simcheck.tolerance_s(c)
    assert err.max() <= 1.0, err.tolist()
    # The published formula adds about one RTT to a flow that fits in the initial window.
    published = simcheck.model_fct_s(1000, c, r, variant="published")[()]
    assert published - ct["fct_s"].iloc[0] > 0.7 * r


def test_delayed_ack_model_tracks_the_simulator(core):
    c, r = profiles.load("3.5G").typical()
    sizes = [1000, 14481, 40_000, 300_000]
    ct = simcheck.completion_times(
        latlab.run(simcheck.lossless_scenario(sizes, c, r, delayed_ack=True)).flows
    )
    model = simcheck.model_fct_s(ct["size_bytes"], c, r, delayed_ack=latency.DelayedAck())
    assert np.allclose(ct["fct_s"], model, rtol=0.03)
    # Without the delayed-ACK terms the one-segment flow is off by the 40 ms timer.
    assert ct["fct_s"].iloc[0] - simcheck.model_fct_s(1000, c, r)[()] == pytest.approx(
        0.04, abs=0.002
    )


def test_probe_rtt_inversion_agrees_with_the_handshake_column(core):
    prof = profiles.load("3.5G")
    run = loaded_rtt.plan(prof, runs=1, probes=40, duration_s=16.0, warmup_s=6.0)[0]
    flows = latlab.run(loaded_rtt.scenario(run)).flows
    rtts, excluded, method = loaded_rtt.probe_rtts(
        flows.drop(columns=["handshake_rtt_ns"], errors="ignore"), run.base_rtt_s
    )
    assert method == "rfc6298-inversion" and rtts.size + excluded == 40 and rtts.size >= 30
    # The bloated buffer: the probes see far more than the base RTT.
    assert np.median(rtts) > run.base_rtt_s + 0.05
    if "handshake_rtt_ns" in flows.columns:
        direct, _, method = loaded_rtt.probe_rtts(flows, run.base_rtt_s)
        assert method == "handshake_rtt_ns" and direct.size >= rtts.size
        # Row by row, on the probes the inversion keeps: RFC 6298 arithmetic gives the handshake RTT to the ns.
        probes = flows[flows["group"] == loaded_rtt.PROBE_GROUP]
        fct = probes["fct_ns"].astype(float).to_numpy()
        inverted = (8 * probes["srtt_ns"].astype(float).to_numpy() - fct) / 6
        kept = np.any(np.abs(inverted[:, None] / 1e9 - rtts[None, :]) < 1e-12, axis=1)
        assert kept.sum() == rtts.size
        assert np.allclose(
            inverted[kept], probes["handshake_rtt_ns"].astype(float).to_numpy()[kept], atol=2.0
        )


def test_loaded_distribution_round_trips_through_a_profile_file(tmp_path):
    prof = profiles.load("4G")
    samples = np.random.default_rng(1).uniform(0.04, 0.05, 500)
    import pandas as pd

    summary = pd.DataFrame(
        [
            {
                "buffer_bytes": 64000,
                "capacity_bps": 5.7771e7,
                "base_rtt_s": 0.04,
                "cc": "cubic",
                "probes": 500,
                "duration_s": 70.0,
                "warmup_s": 10.0,
                "method": "x",
                "excluded": 0,
            }
        ]
    )
    base = tmp_path / "mine.toml"
    base.write_text(
        profiles._data_dir().joinpath("4G.toml").read_text().replace('name = "4G"', 'name = "mine"')
    )
    (tmp_path / "mine-loaded.toml").write_text(loaded_rtt.variant_toml(prof, samples, summary))
    mine = profiles.load(str(base))
    assert mine.name == "mine" and mine.loaded_info["samples"] == 500
    assert mine.loaded_rtt_ms.quantile(0.5)[0] == pytest.approx(np.median(samples) * 1e3, rel=1e-3)


def test_run_scenarios_serial_and_parallel_agree(core, tmp_path):
    c, r = profiles.load("4G").typical()
    scs = [simcheck.lossless_scenario([5000], c, r), simcheck.lossless_scenario([50_000], c, r)]
    serial = efficiency.run_scenarios(scs, jobs=1, rundir=tmp_path / "serial")
    parallel = efficiency.run_scenarios(scs, jobs=2)
    for a, b in zip(serial, parallel):
        assert a["fct_ns"].tolist() == b["fct_ns"].tolist()
