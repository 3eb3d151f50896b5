"""latlab.models.tcp_equation (numpy) against the Rust TFRC sender's equation (latlab._core.tcp_equation_rate),
and latlab.models.fairness."""

from __future__ import annotations

import math

import numpy as np
import pytest

from latlab.models import tcp_equation as eq
from latlab.models.fairness import jain_index


def _rust():
    core = pytest.importorskip("latlab._core")
    if not hasattr(core, "tcp_equation_rate"):
        pytest.fail("latlab._core lacks tcp_equation_rate: rebuild the extension (make build)")
    return core.tcp_equation_rate


def test_numpy_equation_matches_rust_over_a_grid():
    rust = _rust()
    p = np.logspace(-8, 0, 97)
    for rtt_s in (1e-3, 0.01, 0.05, 0.12, 0.294, 1.0, 5.0):
        for s_bytes in (40.0, 1200.0, 1460.0):
            x_py = eq.tcp_equation_rate_bps(p, rtt_s, s_bytes) / 8  # bytes/s, b = 1, t_RTO = 4R
            x_rs = np.array([rust(s_bytes, rtt_s, float(q)) for q in p])
            np.testing.assert_allclose(x_py, x_rs, rtol=1e-9, atol=0)


def test_rust_equation_edges():
    rust = _rust()
    assert rust(1200.0, 0.12, 0.0) == math.inf  # no loss: no limit
    assert rust(1200.0, 0.12, 2.0) == rust(1200.0, 0.12, 1.0)  # p above 1 counts as 1


def test_general_b_and_t_rto():
    # b = 2 and t_RTO = 1 s by hand: R·sqrt(2bp/3) + t_RTO·3·sqrt(3bp/8)·p·(1 + 32p²)
    p, r, s = 0.02, 0.1, 1000.0
    denom = r * math.sqrt(4 * p / 3) + 1.0 * 3 * math.sqrt(6 * p / 8) * p * (1 + 32 * p * p)
    assert float(eq.tcp_equation_rate_bps(p, r, s, b=2.0, t_rto_s=1.0)) == pytest.approx(
        8 * s / denom, rel=1e-12
    )


def test_jain_index_from_models():
    assert jain_index([1.0, 1.0]) == pytest.approx(1.0)
    assert jain_index([1.0, 0.0]) == pytest.approx(0.5)
    assert math.isnan(jain_index([]))
