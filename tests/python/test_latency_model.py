"""latlab.models.latency: the equations against hand-computed values, and the vectorised Monte-Carlo."""

import math

import numpy as np
import pytest

from latlab.models import latency as L
from latlab.models import montecarlo as M
from latlab.models import profiles as P

# A round-number path: S/C = 10 ms, R = 100 ms.
S = 10_000.0
C = 1e6
R = 0.1
T = S / C


def test_textbook_slow_start_with_iw_1():
    # 15 segments, I = 1: windows 1, 2, 4, 8. Walk it by hand: data starts
    # after the handshake (0.1); window 1 sent 0.10-0.11, its ACK back at
    # 0.21; window 2 0.21-0.23, first ACK back 0.32; window 3 0.32-0.36,
    # back 0.43; window 4 (8 segments) 0.43-0.51, last ACK back at 0.61.
    assert L.completion_time(15 * S, C, R, S, iw=1) == pytest.approx(0.61)
    assert L.idle_rounds(15 * S, C, R, S, iw=1) == 3


def test_flow_within_the_initial_window_exact_and_published():
    o = 5 * S  # K = 1 with IW 10
    exact = L.completion_time(o, C, R, S, iw=10)
    assert exact == pytest.approx(2 * R + o / C)
    published = L.completion_time(o, C, R, S, iw=10, variant="published")
    # The published formula counts one idle round after the only window: R + S/C - I*S/C.
    assert published - exact == pytest.approx(R + T - 10 * T)
    assert L.idle_rounds(o, C, R, S, iw=10, variant="published") == 1


def test_published_and_exact_differ_by_at_most_one_round():
    o = np.logspace(3, 8, 200)
    r = np.linspace(0.01, 0.3, 200)
    exact = L.idle_rounds(o, C, r, S, iw=10)
    published = L.idle_rounds(o, C, r, S, iw=10, variant="published")
    assert np.all((published - exact >= 0) & (published - exact <= 1))


def test_exact_model_hand_case_iw_10():
    # 30 segments, I = 10: windows 10 and 20, K = 2; x = (0.1 + 0.01)/(0.1) = 1.1, Q = 1.
    # One idle round after window 1: R + T - 10T = 0.01. L = 0.2 + 0.3 + 0.01.
    assert L.completion_time(30 * S, C, R, S, iw=10) == pytest.approx(0.51)


def test_no_idle_when_the_window_covers_the_bdp():
    # I*S/C = 1 s > R + S/C: never window-limited, L = 2R + O/C.
    o = 1000 * S
    assert L.completion_time(o, C, R, S, iw=100) == pytest.approx(2 * R + o / C)


def test_tfo_removes_one_rtt():
    o = np.array([1, 30, 500]) * S
    plain = L.completion_time(o, C, R, S)
    assert L.completion_time(o, C, R, S, tfo=True) == pytest.approx(plain - R)
    # A flow within IW with TFO is as fast as the ideal protocol.
    assert L.efficiency(5 * S, C, R, S, tfo=True) == pytest.approx(1.0)


def test_delayed_ack_hand_cases():
    d = L.DelayedAck(segments=2, timeout_s=0.04)
    # One segment: the receiver holds its ACK for the whole timer.
    assert L.completion_time(S, C, R, S, delayed_ack=d) == pytest.approx(2 * R + T + 0.04)
    # Ten segments (even, within IW): ACKed at once.
    assert L.completion_time(10 * S, C, R, S, delayed_ack=d) == pytest.approx(2 * R + 10 * T)
    # Eleven: window 10, an idle round (first ACK after 2 segments: R + 2T - 10T),
    # then the 11th alone waits for the timer.
    assert L.completion_time(11 * S, C, R, S, delayed_ack=d) == pytest.approx(
        2 * R + 11 * T + (R - 8 * T) + 0.04
    )


def test_delayed_ack_window_growth_is_one_and_a_half():
    # I = 2, b = 2: windows 2, 3, 5, 8; 18 segments need 4 windows; R large so every round idles.
    d = L.DelayedAck(segments=2, timeout_s=0.0)
    r = 1.0
    expected = 2 * r + 18 * T + sum(r + 2 * T - w * T for w in (2, 3, 5))
    assert L.completion_time(18 * S, C, r, S, iw=2, delayed_ack=d) == pytest.approx(expected)


def test_delayed_ack_model_with_one_segment_per_ack_is_the_exact_model():
    rng = np.random.default_rng(5)
    o = rng.integers(1, 5000, 5000) * S
    c = rng.uniform(1e5, 1e8, 5000)
    r = rng.uniform(0.005, 0.5, 5000)
    got = L._completion_time_delayed_ack(
        o, c, r, np.asarray(S), np.asarray(10.0), L.DelayedAck(segments=1)
    )
    assert np.allclose(got, L.completion_time(o, c, r, S, iw=10), rtol=1e-12, atol=1e-12)


def test_efficiency_single_and_multi_flow():
    o = 30 * S
    assert L.efficiency(o, C, R, S) == pytest.approx((R + o / C) / 0.51)
    assert L.ideal_time(o, C, R, n_flows=2) == pytest.approx(R + 2 * o / C)
    r_s = 0.3
    e2 = L.efficiency(o, C, R, S, n_flows=2, rtt_loaded_s=r_s)
    assert e2 == pytest.approx((R + 2 * o / C) / L.completion_time(o, C / 2, r_s, S))
    big = L.efficiency(1e6 * S, C, R, S)
    assert 0.99 < big <= 1.0


def test_efficiency_is_at_most_one_and_broadcasts():
    o = np.logspace(3, 9, 50)[:, None]
    r = np.linspace(0.01, 0.5, 7)[None, :]
    for variant in ("exact", "published"):
        e = L.efficiency(o, 2e7, r, 1448 * 8, variant=variant)
        assert e.shape == (50, 7)
        assert np.all((e > 0) & (e <= 1 + 1e-12))


def test_wire_bits_counts_a_header_per_segment():
    assert L.wire_bits(1448) == 8 * 1500
    assert L.wire_bits(1449) == 8 * (1449 + 2 * 52)


@pytest.mark.parametrize("bad", [0, -1, float("nan")])
def test_sizes_must_be_positive(bad):
    with pytest.raises(ValueError, match="flow size"):
        L.completion_time(bad, C, R, S)
    with pytest.raises(ValueError, match="flow sizes must be > 0"):
        M.efficiency_vs_size(P.load("4G"), [1000, bad], n_samples=10)


def test_unknown_variant_and_bad_options():
    with pytest.raises(ValueError, match="unknown variant"):
        L.completion_time(S, C, R, S, variant="nope")
    with pytest.raises(ValueError, match="exact"):
        L.completion_time(S, C, R, S, variant="published", delayed_ack=L.DelayedAck())
    with pytest.raises(ValueError, match="initial window"):
        M.ModelOptions(iw=0)
    with pytest.raises(ValueError, match="capacity"):
        L.completion_time(S, 0, R, S)


def test_million_sample_monte_carlo_runs():
    df = M.efficiency_vs_size(P.load("4G"), [10_000, 100_000, 1_000_000], n_samples=1_000_000)
    assert list(df["size_bytes"]) == [10_000, 100_000, 1_000_000]
    assert np.all((df[["mean", "p5", "p50", "p95"]] > 0) & (df[["mean", "p5", "p50", "p95"]] <= 1))
    assert np.all(df["p5"] <= df["p50"]) and np.all(df["p50"] <= df["p95"])
    assert df.attrs["n_samples"] == 1_000_000


def test_monte_carlo_with_one_background_flow():
    prof = P.load("3.5G")
    single = M.efficiency_vs_size(prof, [10_000], n_samples=20_000)
    loaded = M.efficiency_vs_size(prof, [10_000], n_flows=2, n_samples=20_000)
    # The bloated 3.5G buffer inflates R_S: small flows lose most of their efficiency.
    assert loaded["mean"].iloc[0] < 0.6 * single["mean"].iloc[0]
    with pytest.raises(P.ProfileError, match="no loaded-RTT"):
        M.efficiency_vs_size(P.load("3G"), [10_000], n_flows=2, n_samples=10)
    with pytest.raises(P.ProfileError, match="background flow"):
        M.efficiency_vs_size(prof, [10_000], n_flows=3, n_samples=10)


def test_study_finding_4g_less_efficient_than_3_5g():
    a = M.efficiency_vs_size(
        P.load("3.5G"),
        [100_000, 1_000_000],
        n_samples=20_000,
        options=M.ModelOptions(variant="published"),
    )
    b = M.efficiency_vs_size(
        P.load("4G"),
        [100_000, 1_000_000],
        n_samples=20_000,
        options=M.ModelOptions(variant="published"),
    )
    assert np.all(b["mean"].to_numpy() < a["mean"].to_numpy())


def test_size_grid():
    g = M.size_grid()
    assert g[0] == 1000 and g[-1] == 10_000_000 and len(g) == 41
    assert {10_000, 100_000, 1_000_000} <= set(g.tolist())
    assert math.isclose(g[1] / g[0], 10**0.1, rel_tol=1e-3)
