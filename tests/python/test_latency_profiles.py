"""latlab.models.profiles: built-in profiles, percentile interpolation, kernel smoothing, CSV input."""

import tomllib
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO
from latlab.models import profiles as P


def test_builtin_profiles_hold_table_one():
    assert {"3G", "3.5G", "4G"} <= set(P.names())
    p = P.load("3.5G")
    assert p.throughput_kbps.quantile([0.05, 0.5, 0.95]).tolist() == [2601, 3521, 16272]
    assert p.rtt_ms.quantile([0.05, 0.5, 0.95]).tolist() == [49, 50, 70]
    assert P.load("4G").throughput_kbps.quantile(0.95)[0] == 57771
    assert P.load("3G").rtt_ms.quantile(0.5)[0] == 256
    assert p.typical() == pytest.approx((16_272_000, 0.050))
    assert p.buffer_bytes and P.load("4G").buffer_bytes < p.buffer_bytes


def test_loaded_variants_ship_for_3_5g_and_4g():
    for name in ("3.5G", "4G"):
        p = P.load(name)
        assert p.loaded_rtt_ms is not None, name
        assert int(p.loaded_info["background_flows"]) == 1
    # 3.5G: bloated buffer, RTT shifted far right; 4G: barely changed.
    g35, g4 = P.load("3.5G"), P.load("4G")
    assert g35.loaded_rtt_ms.quantile(0.5)[0] > 2 * g35.rtt_ms.quantile(0.95)[0]
    assert g4.loaded_rtt_ms.quantile(0.5)[0] < 1.3 * g4.rtt_ms.quantile(0.5)[0]


def test_profile_names_are_case_insensitive_and_unknown_ones_are_listed():
    assert P.load("3.5g").name == "3.5G"
    with pytest.raises(
        P.ProfileError, match=r"unknown profile '5G'; built-in profiles: 3G, 3.5G, 4G"
    ):
        P.load("5G")


def test_profiles_ship_as_package_data():
    include = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["maturin"]["include"]
    assert any("data/profiles" in glob for glob in include)
    data = REPO / "python" / "latlab" / "data" / "profiles"
    assert (data / "3.5G.toml").is_file() and (data / "4G-loaded.toml").is_file()


def test_interpolation_is_log_normal_between_percentiles():
    d = P.PercentileDistribution((5, 50, 95), (10.0, 20.0, 80.0))
    # Halfway in z between p50 (z = 0) and p95 (z = 1.645) lies the geometric mean.
    from statistics import NormalDist

    q = NormalDist().cdf(1.6448536269514722 / 2)
    assert d.quantile(q)[0] == pytest.approx(40.0)
    # Held beyond the outermost percentiles.
    assert d.quantile([0.001, 0.999]).tolist() == pytest.approx([10.0, 80.0])
    x = d.sample(200_000, np.random.default_rng(3))
    assert np.percentile(x, [5, 50, 95]) == pytest.approx([10, 20, 80], rel=0.02)
    assert x.min() == pytest.approx(10.0) and x.max() == pytest.approx(80.0)


@pytest.mark.parametrize(
    "pct, vals, match",
    [
        ((50, 5), (1, 2), "increase"),
        ((0, 50), (1, 2), "strictly between"),
        ((5, 50), (2, 1), "not decrease"),
        ((5, 50), (0, 1), "positive"),
        ((5,), (1, 2), "one length"),
    ],
)
def test_percentile_distribution_rejects_bad_tables(pct, vals, match):
    with pytest.raises(P.ProfileError, match=match):
        P.PercentileDistribution(pct, vals)


def test_kernel_width_is_s_over_sqrt_n_and_draws_stay_positive():
    values = np.random.default_rng(0).lognormal(np.log(40), 0.3, 400)
    d = P.SampleDistribution(values)
    assert d.bandwidth == pytest.approx(np.std(values, ddof=1) / np.sqrt(400))
    x = d.sample(100_000, np.random.default_rng(1))
    assert np.all(x > 0)
    assert np.mean(x) == pytest.approx(values.mean(), rel=0.01)
    assert np.std(x) ** 2 == pytest.approx(np.var(values) + d.bandwidth**2, rel=0.05)
    # A wide kernel near zero is reflected, never negative.
    assert np.all(
        P.SampleDistribution(np.array([0.1, 0.2, 50.0])).sample(10_000, np.random.default_rng(2))
        > 0
    )


def test_paired_samples_are_drawn_from_the_same_row():
    # Throughput and RTT perfectly anti-correlated across rows; paired draws keep it.
    thr = np.array([1000.0, 2000.0, 4000.0, 8000.0] * 50)
    rtt = 1e5 / thr
    prof = P.from_samples(thr, rtt)
    d = prof.draw(50_000, np.random.default_rng(2))
    assert np.corrcoef(d.capacity_bps, d.rtt_s)[0, 1] < -0.8


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.csv"
    path.write_text(text)
    return path


def test_csv_with_header_in_any_order_extra_columns_and_comments(tmp_path):
    path = _csv(
        tmp_path,
        "# my drive test\nrtt_ms,site,throughput_kbps\n40,a,5000\n\n45,b,6000\n38,c,20000\n",
    )
    cols = P.read_samples_csv(path)
    assert cols["throughput_kbps"].tolist() == [5000, 6000, 20000]
    assert cols["rtt_ms"].tolist() == [40, 45, 38]
    prof = P.from_csv(path)
    assert prof.capacity == "sampled" and prof.paired


def test_csv_without_header(tmp_path):
    cols = P.read_samples_csv(_csv(tmp_path, "5000,40\n6000,45\n"))
    assert cols["rtt_ms"].tolist() == [40, 45]


@pytest.mark.parametrize(
    "text, match",
    [
        ("rtt_ms,foo\n40,1\n41,2\n", "line 1: missing column throughput_kbps"),
        ("speed,delay\n1,2\n3,4\n", "missing columns throughput_kbps, rtt_ms"),
        (
            "throughput_kbps,rtt_ms\n5000,40\n-6000,45\n",
            "line 3: throughput_kbps must be > 0, got -6000",
        ),
        ("throughput_kbps,rtt_ms\n5000,40\n6000,0\n", "line 3: rtt_ms must be > 0, got 0"),
        ("throughput_kbps,rtt_ms\n5000,fast\n6000,45\n", "line 2: rtt_ms: 'fast' is not a number"),
        ("5000,abc\n6000,45\n", "line 1: rtt_ms: 'abc' is not a number"),
        ("throughput_kbps,rtt_ms\n5000,inf\n6000,45\n", "not a finite number"),
        ("throughput_kbps,rtt_ms\n5000,40\n6000\n", "line 3: expected 2 columns, got 1"),
        ("5000,40,7\n6000,45,8\n", "expected 2 columns"),
        ("throughput_kbps,rtt_ms\n5000,40\n", "at least 2 measurements"),
        ("", "no measurements"),
    ],
)
def test_csv_errors_name_file_line_and_problem(tmp_path, text, match):
    with pytest.raises(P.ProfileError, match=match):
        P.read_samples_csv(_csv(tmp_path, text))


def test_missing_csv_file(tmp_path):
    with pytest.raises(P.ProfileError, match="no such file"):
        P.read_samples_csv(tmp_path / "nope.csv")


def test_capacity_rule():
    p = P.load("4G")
    fixed = p.draw(1000, np.random.default_rng(1))
    assert np.all(fixed.capacity_bps == 57_771_000)
    sampled = p.with_(capacity="sampled").draw(100_000, np.random.default_rng(1))
    assert np.median(sampled.capacity_bps) == pytest.approx(5_830_000, rel=0.02)
    with pytest.raises(P.ProfileError, match="quantile"):
        p.with_(capacity=1.5)
