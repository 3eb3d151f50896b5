"""The TCP throughput equation of RFC 5348 §3.1, vectorised, and what follows from it.

X = s / (R·sqrt(2bp/3) + t_RTO·(3·sqrt(3bp/8))·p·(1 + 32p²)) bytes/s, with s
the segment size, R the round-trip time, p the loss event rate, b the
packets acknowledged per ACK and t_RTO the retransmission timeout. RFC 5348
recommends b = 1 and t_RTO = 4R; with those the Rust core's TFRC sender
(crates/proto/src/tfrc/equation.rs) computes the same rate, and
``tests/python/test_tcp_equation.py`` checks the two against each other.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def tcp_equation_rate_bps(
    p: Any, rtt_s: float, segment_bytes: float, b: float = 1.0, t_rto_s: float | None = None
) -> np.ndarray:
    """RFC 5348 §3.1: X in bit/s for loss event rate ``p`` (scalar or array, 0 < p ≤ 1) and RTT ``rtt_s``.

    t_RTO defaults to 4R and b to 1, as RFC 5348 recommends. Infinite at p = 0.
    """
    p = np.asarray(p, dtype=float)
    t_rto_s = 4.0 * rtt_s if t_rto_s is None else t_rto_s
    denom_s = rtt_s * np.sqrt(2 * b * p / 3) + t_rto_s * (3 * np.sqrt(3 * b * p / 8)) * p * (
        1 + 32 * p**2
    )
    with np.errstate(divide="ignore"):
        return 8.0 * segment_bytes / denom_s


def knee_loss_event_rate() -> float:
    """The p at which the equation's timeout term equals its first term (with t_RTO = 4R, any b, R, s).

    R·sqrt(2bp/3) = 4R·3·sqrt(3bp/8)·p(1 + 32p²) reduces to p + 32p³ = 1/9
    (sqrt(2/3)/sqrt(3/8) = 4/3): below it the rate falls as p^(-1/2), above it
    as p^(-3/2) and then p^(-7/2), which is the "knee" of the curve.
    """
    roots = np.roots([32.0, 0.0, 1.0, -1.0 / 9.0])
    real = roots[np.abs(roots.imag) < 1e-12].real
    return float(real[real > 0][0])


def equation_elasticity(p: Any) -> np.ndarray:
    """−d ln X / d ln p of the equation with t_RTO = 4R (independent of R and s; b = 1).

    0.5 on the square-root branch, rising through the knee towards 3.5. It
    decides whether flows that share congestion events (DFlow's delay events
    are seen by every flow with packets in the queue) converge to equal
    rates: a flow's p is the shared event frequency over its own packet rate,
    so a flow that falls behind gets a proportionally higher p, and its
    equation rate falls less than proportionally (it recovers) only while
    the elasticity is below 1.
    """
    p = np.asarray(p, dtype=float)
    first = np.sqrt(2 * p / 3)  # R·sqrt(2p/3) / R
    c = 4.0 * 3 * np.sqrt(3 / 8)  # t_RTO·3·sqrt(3/8) / R
    slow, fast = c * p**1.5, c * 32 * p**3.5
    return (0.5 * first + 1.5 * slow + 3.5 * fast) / (first + slow + fast)


def unstable_loss_event_rate() -> float:
    """The p above which shared congestion events stop equalising rates: elasticity = 1 (bisection)."""
    lo, hi = 1e-6, 1.0
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        if equation_elasticity(mid) < 1.0:
            lo = mid
        else:
            hi = mid
    return float(np.sqrt(lo * hi))


def loss_event_rate_for(rate_bps: float, rtt_s: float, segment_bytes: float) -> float:
    """The p at which the equation gives ``rate_bps`` (bisection in log p; the equation falls monotonically in p).

    1 when even p = 1 allows more than ``rate_bps``.
    """
    lo, hi = 1e-9, 1.0
    if tcp_equation_rate_bps(hi, rtt_s, segment_bytes) >= rate_bps:
        return hi
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        if tcp_equation_rate_bps(mid, rtt_s, segment_bytes) > rate_bps:
            lo = mid
        else:
            hi = mid
    return float(np.sqrt(lo * hi))
