"""Latency first: per-sample RTT / one-way delay percentiles in the summary, the overview
figure and `latlab results`, checked against the samples and against the path's physics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from conftest import TINY_TOML
from latlab import latency

# TINY_TOML's path: access 1 ms, core 5 ms, access 1 ms each way; a 30 kB
# queue on the 10 Mbit/s core.
BASE_RTT_MS = 2 * (1 + 5 + 1)
CORE_BPS, QUEUE_BYTES = 10e6, 30_000
MAX_QUEUEING_MS = QUEUE_BYTES * 8 / CORE_BPS * 1e3  # 24 ms
# A full-size data packet and its ACK serialised on each hop, at most.
SERIALISATION_MS = 2 * 1500 * 8 / 100e6 * 1e3 + 1500 * 8 / CORE_BPS * 1e3 + 0.5

# A CBR UDP flow at a tenth of the core beside one TCP flow: its one-way delay
# is the base delay plus what the TCP flow queues.
UDP_TOML = (
    TINY_TOML.replace("count = 2", "count = 1")
    + """
[[flows]]
name = "video"
src = "s1"
dst = "d1"
kind = "udp"
start_s = 0
udp = { pattern = "cbr", rate_bps = 1e6, size_bytes = 1000 }
"""
)


def _expanded_ms(hist: pd.DataFrame) -> np.ndarray:
    """Every sample as its bucket's middle: the samples as the histogram holds them."""
    mids = (hist["low_ns"].to_numpy("float64") + hist["high_ns"].to_numpy("float64")) / 2e6
    return np.repeat(mids, hist["count"].to_numpy("int64"))


def test_nearest_rank_percentiles_of_a_known_histogram():
    hist = pd.DataFrame(
        {
            "flow_id": [0, 0, 1],
            "metric": ["rtt"] * 3,
            "low_ns": [10_000_000, 20_000_000, 20_000_000],
            "high_ns": [10_200_000, 20_400_000, 20_400_000],
            "count": [50, 40, 10],
        }
    )
    p = latency.percentiles_ms(hist)
    # 100 samples: ranks 50, 95, 99 fall in the first, second, second bucket.
    assert p == {50: 10.1, 95: 20.2, 99: 20.2}
    assert latency.percentiles_ms(hist.iloc[:0]) == {50: None, 95: None, 99: None}


def test_rtt_percentiles_match_the_samples_and_the_path(core, tiny_toml):
    import latlab

    res = latlab.run(latlab.Scenario.from_toml(tiny_toml), progress=False)
    hist = res.latency_histogram
    assert set(hist["metric"]) == {"rtt"} and set(hist["flow_id"]) == {0, 1}
    # Every sample the senders took lies on this path: base RTT, plus at most a full queue
    # (a bucket [low, high) holds the sample, so compare the far edge).
    assert hist["high_ns"].min() / 1e6 > BASE_RTT_MS
    assert hist["low_ns"].max() / 1e6 <= BASE_RTT_MS + MAX_QUEUEING_MS + SERIALISATION_MS
    # The senders' own measurements (one per round trip at least), not the 100 ms srtt series.
    intervals = res.run_info["duration_s"] * 10
    assert (hist.groupby("flow_id")["count"].sum() > intervals).all()

    s = res.summary()
    samples = _expanded_ms(hist)
    for q in latency.PERCENTILES:
        assert s[f"rtt_p{q}_ms"] == pytest.approx(np.percentile(samples, q, method="inverted_cdf"))
    assert s["rtt_p50_ms"] <= s["rtt_p95_ms"] <= s["rtt_p99_ms"]
    assert s["owd_p50_ms"] is None

    by_flow = res.latency_per_flow()
    for _, row in by_flow.iterrows():
        mine = _expanded_ms(hist[hist["flow_id"] == row["flow_id"]])
        assert row["samples"] == len(mine)
        assert row["p99_ms"] == pytest.approx(np.percentile(mine, 99, method="inverted_cdf"))
        # The sampled srtt (an average of the same samples) stays inside their range.
        fs = res.flow_samples
        srtt_ms = fs[fs["flow_id"] == row["flow_id"]]["srtt_ns"].iloc[-1] / 1e6
        assert mine.min() * 0.97 <= srtt_ms <= mine.max() * 1.03


def test_udp_flows_report_one_way_delay(core, tmp_path):
    import latlab

    path = tmp_path / "udp.toml"
    path.write_text(UDP_TOML)
    res = latlab.run(latlab.Scenario.from_toml(path), progress=False)
    hist = res.latency_histogram
    udp = hist[hist["metric"] == "owd"]
    assert set(udp["flow_id"]) == {1}
    # 1000 B every 8 ms at 1 Mbit/s for 2 s (less the first packet's flight).
    assert 240 <= udp["count"].sum() <= 251
    assert udp["high_ns"].min() / 1e6 > BASE_RTT_MS / 2
    assert udp["low_ns"].max() / 1e6 <= BASE_RTT_MS / 2 + MAX_QUEUEING_MS + SERIALISATION_MS
    owd = _expanded_ms(udp)
    s = res.summary()
    assert s["owd_p50_ms"] == pytest.approx(np.percentile(owd, 50, method="inverted_cdf"))
    assert s["rtt_p50_ms"] is not None  # the TCP flow's


def test_latlab_run_prints_percentiles_beside_goodput(core, tiny_toml, tmp_path):
    from latlab.cli import cli
    from latlab.results import Results

    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["run", str(tiny_toml), "-o", str(out)], terminal_width=160)
    assert res.exit_code == 0, res.output
    s = Results.load(out).summary()
    assert "RTT p50/p95/p99" in res.output
    line = next(ln for ln in res.output.splitlines() if "RTT p50/p95/p99" in ln)
    assert " / ".join(f"{s[f'rtt_p{q}_ms']:.1f}" for q in latency.PERCENTILES) in line
    # The per-flow table: goodput and the three percentiles of each of the two flows.
    assert "latency per flow" in res.output and "p99 ms" in res.output
    by_flow = Results.load(out).latency_per_flow()
    for _, row in by_flow.iterrows():
        assert f"{row['p95_ms']:.1f}" in res.output


def test_overview_has_latency_panels(core, tiny_toml):
    import latlab
    from latlab import plot

    res = latlab.run(latlab.Scenario.from_toml(tiny_toml), progress=False)
    fig = plot.overview_figure(res)
    labels = {(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes}
    assert ("time (s)", "srtt (ms)") in labels
    assert ("RTT (ms)", "fraction of samples") in labels
    assert ("flow id", "RTT (ms)") in labels
    srtt_ax = next(ax for ax in fig.axes if ax.get_ylabel() == "srtt (ms)")
    assert len(srtt_ax.get_lines()) == 2  # one line per flow
    cdf_ax = next(ax for ax in fig.axes if ax.get_ylabel() == "fraction of samples")
    ys = np.concatenate([ln.get_ydata() for ln in cdf_ax.get_lines() if len(ln.get_ydata()) > 3])
    assert ys.max() == pytest.approx(1.0)


def test_latlab_results_shows_percentiles_per_run(core, tmp_path):
    from latlab.cli import cli
    from latlab.results import Results

    (tmp_path / "quick.toml").write_text(TINY_TOML.replace("duration_s = 2.0", "duration_s = 1.0"))
    sweep = tmp_path / "sw.toml"
    sweep.write_text('base = "quick.toml"\n[grid]\n"flows.0.cc" = ["newreno", "cubic"]\n')
    out = tmp_path / "out"
    runner = CliRunner()
    res = runner.invoke(cli, ["sweep", str(sweep), "-o", str(out), "-q", "--inline"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["results", str(out)], terminal_width=250)
    assert res.exit_code == 0, res.output
    for header in ("RTT p50 ms", "RTT p95 ms", "RTT p99 ms"):
        assert header in res.output
    for run_dir in sorted((out / "runs").iterdir()):
        s = Results.load(run_dir).summary()
        row = next(ln for ln in res.output.splitlines() if run_dir.name in ln)
        for q in latency.PERCENTILES:
            assert f"{s[f'rtt_p{q}_ms']:.1f}" in row
