"""Jain's fairness index (R. Jain, D. Chiu, W. Hawe, DEC-TR-301, 1984)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def jain_index(rates: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when all are equal, 1/n when one flow has everything.

    NaN for no flows or when every rate is zero (fairness is undefined then).
    """
    x = np.asarray(rates, dtype=float)
    if x.size == 0 or not np.any(x > 0):
        return float("nan")
    return float(x.sum() ** 2 / (x.size * np.sum(x**2)))
