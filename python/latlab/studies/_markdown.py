"""Markdown building blocks shared by the studies' reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A pipe table: one header row, then one row per sequence (cells formatted with ``str``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def num(x: Any, fmt: str = "{:.1f}") -> str:
    """``x`` formatted with ``fmt``, or an en dash when it is missing, NaN or not a number."""
    try:
        return "–" if x is None or not np.isfinite(float(x)) else fmt.format(float(x))
    except (TypeError, ValueError):
        return "–"


def pct(x: Any, fmt: str = "{:.1f} %") -> str:
    """A fraction as a percentage (``fmt`` applied to 100·x); an en dash when missing."""
    try:
        return num(100 * float(x), fmt)
    except (TypeError, ValueError):
        return "–"
