"""Monte-Carlo of protocol efficiency versus flow size over a network profile.

One set of draws (C, R_O and, with background flows, R_S) is made per call
and reused for every flow size (common random numbers: the curves are smooth
and sizes compare like with like). Each size is one vectorised evaluation of
:func:`latlab.models.latency.efficiency` over all draws.

Units: the profile's throughput is goodput, so the model runs in payload
units: O = size·8 bits, S = MSS·8 bits (1448 bytes, the study's segment).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from latlab.models import latency
from latlab.models.profiles import Profile, ProfileError

#: Percentiles reported beside the mean.
PERCENTILES = (5, 50, 95)
DEFAULT_SAMPLES = 200_000


@dataclass(frozen=True)
class ModelOptions:
    """The TCP behind L_S: initial window, formula variant, TFO, delayed ACKs, segment size."""

    iw: int = latency.IW_SEGMENTS
    variant: latency.Variant = "exact"
    tfo: bool = False
    delayed_ack: latency.DelayedAck | None = None
    mss_bytes: int = latency.MSS_BYTES

    def __post_init__(self) -> None:
        if int(self.iw) != self.iw or self.iw < 1:
            raise ValueError(
                f"initial window must be a positive whole number of segments, got {self.iw!r}"
            )
        if self.variant not in latency.VARIANTS:
            raise ValueError(
                f"unknown variant {self.variant!r}; expected one of {', '.join(latency.VARIANTS)}"
            )
        if self.delayed_ack is not None and self.variant != "exact":
            raise ValueError("delayed ACKs extend the exact model; use variant 'exact'")
        if int(self.mss_bytes) != self.mss_bytes or self.mss_bytes < 1:
            raise ValueError(f"MSS must be a positive number of bytes, got {self.mss_bytes!r}")

    def label(self) -> str:
        parts = [self.variant, f"IW {self.iw}"]
        if self.tfo:
            parts.append("TFO")
        if self.delayed_ack is not None:
            parts.append(
                f"delayed ACK {self.delayed_ack.segments}/{self.delayed_ack.timeout_s * 1e3:g} ms"
            )
        return ", ".join(parts)


def size_grid(
    min_bytes: float = 1e3, max_bytes: float = 1e7, per_decade: int = 10
) -> NDArray[np.int64]:
    """Flow sizes (bytes) on a log grid from ``min_bytes`` to ``max_bytes``, ``per_decade`` points per decade."""
    if not (min_bytes > 0 and max_bytes >= min_bytes):
        raise ValueError(
            f"flow sizes must be > 0 and max >= min, got {min_bytes!r} and {max_bytes!r}"
        )
    if per_decade < 1:
        raise ValueError(f"points per decade must be >= 1, got {per_decade!r}")
    decades = np.log10(max_bytes) - np.log10(min_bytes)
    count = int(round(decades * per_decade)) + 1
    return np.unique(
        np.round(np.logspace(np.log10(min_bytes), np.log10(max_bytes), count)).astype(np.int64)
    )


def check_sizes(sizes_bytes: ArrayLike) -> NDArray[np.float64]:
    """Sizes as floats; ValueError naming the first size that is not > 0."""
    sizes = np.atleast_1d(np.asarray(sizes_bytes, dtype=np.float64))
    if sizes.size == 0:
        raise ValueError("no flow sizes given")
    bad = sizes[~(np.isfinite(sizes) & (sizes > 0))]
    if bad.size:
        raise ValueError(f"flow sizes must be > 0 bytes, got {bad[0]:g}")
    return sizes


def efficiency_vs_size(
    profile: Profile,
    sizes_bytes: ArrayLike,
    n_flows: int = 1,
    n_samples: int = DEFAULT_SAMPLES,
    options: ModelOptions | None = None,
    seed: int = 1,
) -> pd.DataFrame:
    """Efficiency per flow size: mean and 5/50/95 percentiles over ``n_samples`` draws from ``profile``.

    ``n_flows = 2`` is the study's "one background flow" case: it needs the
    profile's loaded RTT. Columns: size_bytes, mean, p5, p50, p95,
    fct_mean_s (mean L_S), ideal_mean_s (mean L_O); ``df.attrs`` holds the
    profile, options and sample count.
    """
    options = options or ModelOptions()
    sizes = check_sizes(sizes_bytes)
    if int(n_flows) != n_flows or n_flows < 1:
        raise ValueError(f"number of flows must be a positive integer, got {n_flows!r}")
    if n_flows > 1:
        if profile.loaded_rtt_ms is None:
            raise ProfileError(
                f"profile {profile.name} has no loaded-RTT distribution, needed for {n_flows} flows"
            )
        bg = profile.loaded_info.get("background_flows")
        if bg is not None and int(bg) != n_flows - 1:
            raise ProfileError(
                f"profile {profile.name}'s loaded RTT was measured with {bg} background flow(s), "
                f"not {n_flows - 1}"
            )
    rng = np.random.default_rng(seed)
    draws = profile.draw(n_samples, rng, loaded=n_flows > 1)
    s_bits = latency.segment_bits(options.mss_bytes)
    rows = []
    for size in sizes:
        o_bits = size * 8.0
        l_s = latency.completion_time(
            o_bits,
            draws.capacity_bps / n_flows,
            draws.rtt_s if draws.rtt_loaded_s is None else draws.rtt_loaded_s,
            s_bits,
            options.iw,
            options.variant,
            options.tfo,
            options.delayed_ack,
        )
        l_o = latency.ideal_time(o_bits, draws.capacity_bps, draws.rtt_s, n_flows)
        e = l_o / l_s
        p5, p50, p95 = np.percentile(e, PERCENTILES)
        rows.append(
            {
                "size_bytes": int(round(size)) if size == round(size) else size,
                "mean": float(e.mean()),
                "p5": p5,
                "p50": p50,
                "p95": p95,
                "fct_mean_s": float(l_s.mean()),
                "ideal_mean_s": float(l_o.mean()),
            }
        )
    df = pd.DataFrame(rows)
    df.attrs.update(
        {
            "profile": profile.name,
            "n_flows": int(n_flows),
            "n_samples": int(n_samples),
            "seed": seed,
            "options": asdict(options),
        }
    )
    return df
