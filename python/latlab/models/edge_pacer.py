"""The small-buffer pacing study's analysis curves (docs/models/edge-pacer.md).

All functions take numpy arrays or scalars. Units: ``lam`` in the burstiness
formula is a packet rate (packets/s) and ``d_s`` seconds; in the loss bound and
the throughput curve ``load`` is the normalised load λ ∈ (0, 1] and ``d_pkts`` the
delay bound in packet times (one packet time = packet bits / link rate).
"""

from __future__ import annotations

import numpy as np


def burstiness(lam_pps: np.ndarray | float, d_s: np.ndarray | float) -> np.ndarray:
    """β = 1/sqrt(2λd): burstiness of Poisson traffic of rate λ paced with delay bound d."""
    return 1.0 / np.sqrt(2.0 * np.asarray(lam_pps, float) * np.asarray(d_s, float))


def loss_bound(load: np.ndarray | float, d_pkts: np.ndarray | float) -> np.ndarray:
    """Chernoff bound on bufferless fluid loss, L ≤ (λ e^(1−λ))^(2d)."""
    lam = np.asarray(load, float)
    return (lam * np.exp(1.0 - lam)) ** (2.0 * np.asarray(d_pkts, float))


def relative_throughput(load: float, d_pkts: np.ndarray | float, rtt0_pkts: float) -> np.ndarray:
    """T(d)/T(0) from T ∝ 1/((RTT0 + d)·sqrt(L)) = 1/((RTT0 + d)·(λ e^(1−λ))^d), all times in packet times.

    Increasing in d under light load, decreasing under heavy load (λ → 1).
    """
    d = np.asarray(d_pkts, float)
    x = load * np.exp(1.0 - load)
    return rtt0_pkts / ((rtt0_pkts + d) * x**d)


def offered_load(buffer_bytes: np.ndarray | float, b_star_bytes: float) -> np.ndarray:
    """ρ = 1 − e^(−B/B*): the load TCP offers a bottleneck with buffer B."""
    return 1.0 - np.exp(-np.asarray(buffer_bytes, float) / b_star_bytes)


def fit_b_star(buffer_bytes: np.ndarray, utilisation: np.ndarray) -> float:
    """Least-squares B* of :func:`offered_load` through measured (buffer, utilisation) points (grid search)."""
    b = np.asarray(buffer_bytes, float)
    u = np.clip(np.asarray(utilisation, float), 0.0, 1.0)
    grid = np.geomspace(10.0, 1e6, 4000)
    err = ((1.0 - np.exp(-b[None, :] / grid[:, None]) - u[None, :]) ** 2).sum(axis=1)
    return float(grid[int(np.argmin(err))])


def packet_time_s(rate_bps: float, packet_bytes: int = 1000) -> float:
    return packet_bytes * 8.0 / rate_bps
