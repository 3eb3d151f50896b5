"""Finite flows in the packet simulator, set up to be compared with the latency model.

Scenarios (dicts for :func:`latlab.run`), one flow per flow size, each on its
own node pair ``s{i} -> d{i}`` so that flows never meet and one run covers a
whole size grid:

:func:`lossless_scenario`
    A link of rate C and one-way delay R/2 per pair, with a buffer that
    never fills: the conditions of the exact model. latlab's "linux" preset
    (MSS 1448 + 52 header bytes with timestamps), IW 10, delayed ACK off
    unless asked for, NewReno (plain slow start; no loss happens).
:func:`loaded_scenario`
    The same pair with a DropTail buffer of ``buffer_bytes`` and a long CUBIC
    background flow from time 0; the finite flow starts at a random time
    after a warm-up, so it meets the background flow's standing queue.

Header accounting: the simulator's link carries whole packets, so the model
is evaluated in wire units, C = link rate, S = 1500·8 bits, and O = the
flow's bits on the wire, payload plus 52 header bytes per segment
(:func:`latlab.models.latency.wire_bits`). The last segment of a flow is
usually short; counting its real length (instead of a full S) keeps O/C
exact. The remaining differences are the SYN and ACK serialisation times
(52 bytes each), well inside the tolerance of one segment time S/C.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from latlab.models import latency

PRESET = "linux"
MSS_BYTES = 1448
HEADER_BYTES = 52
WIRE_SEGMENT_BITS = latency.segment_bits(MSS_BYTES, HEADER_BYTES)
LARGE_BUFFER_PACKETS = 1_000_000
GROUP_PREFIX = "size"


def tolerance_s(capacity_bps: float) -> float:
    """One segment time S/C on the wire: the cross-check's tolerance."""
    return WIRE_SEGMENT_BITS / capacity_bps


def model_fct_s(
    sizes_bytes: ArrayLike,
    capacity_bps: ArrayLike,
    rtt_s: ArrayLike,
    iw: int = 10,
    variant: latency.Variant = "exact",
    delayed_ack: latency.DelayedAck | None = None,
) -> NDArray[np.float64]:
    """The model's completion time for the simulator's flows, in wire units (see the module docstring)."""
    o = latency.wire_bits(sizes_bytes, MSS_BYTES, HEADER_BYTES)
    return latency.completion_time(
        o, capacity_bps, rtt_s, WIRE_SEGMENT_BITS, iw, variant, delayed_ack=delayed_ack
    )


def _pairs(
    sizes: NDArray[np.int64], rate_bps: float, delay_ms: float, queue: dict[str, Any]
) -> dict[str, Any]:
    nodes, links = [], []
    for i in range(len(sizes)):
        nodes += [{"name": f"s{i}"}, {"name": f"d{i}"}]
        links.append(
            {
                "from": f"s{i}",
                "to": f"d{i}",
                "rate_bps": float(rate_bps),
                "delay_ms": float(delay_ms),
                "queue": dict(queue),
            }
        )
    return {"kind": "custom", "nodes": nodes, "links": links}


def _sizes(sizes_bytes: ArrayLike) -> NDArray[np.int64]:
    sizes = np.atleast_1d(np.asarray(sizes_bytes))
    if sizes.size == 0 or not np.all(sizes > 0) or not np.all(sizes == np.round(sizes)):
        raise ValueError("flow sizes must be positive whole numbers of bytes")
    return sizes.astype(np.int64)


def lossless_scenario(
    sizes_bytes: ArrayLike,
    capacity_bps: float,
    rtt_s: float,
    iw: int = 10,
    delayed_ack: bool = False,
    name: str = "fct-lossless",
) -> dict[str, Any]:
    """One flow per size over its own lossless link (rate C, delay R/2 each way), all starting at 0."""
    sizes = _sizes(sizes_bytes)
    longest = float(
        model_fct_s(
            sizes.max(),
            capacity_bps,
            rtt_s,
            iw,
            delayed_ack=latency.DelayedAck() if delayed_ack else None,
        )[()]
    )
    return {
        "name": name,
        "duration_s": float(np.ceil(1.5 * longest + 5.0)),
        "sample_interval_ms": 0,
        "tcp": {
            "preset": PRESET,
            "delayed_ack": bool(delayed_ack),
            "initial_window_segments": int(iw),
        },
        "topology": _pairs(
            sizes,
            capacity_bps,
            rtt_s * 1e3 / 2,
            {"kind": "droptail", "limit_packets": LARGE_BUFFER_PACKETS},
        ),
        "flows": [
            {
                "name": f"{GROUP_PREFIX}{i}",
                "src": f"s{i}",
                "dst": f"d{i}",
                "cc": "newreno",
                "size_bytes": int(s),
                "start_s": 0.0,
            }
            for i, s in enumerate(sizes)
        ],
    }


def loaded_scenario(
    sizes_bytes: ArrayLike,
    capacity_bps: float,
    rtt_s: float,
    buffer_bytes: int,
    iw: int = 10,
    warmup_s: float = 10.0,
    jitter_s: float = 6.0,
    seed: int = 1,
    name: str = "fct-loaded",
) -> dict[str, Any]:
    """One flow per size, each on a pair of its own with a background CUBIC flow and a DropTail buffer."""
    sizes = _sizes(sizes_bytes)
    # Worst case for the run length: half the capacity and a full buffer of queueing.
    r_loaded = rtt_s + buffer_bytes * 8.0 / capacity_bps
    longest = float(model_fct_s(sizes.max(), capacity_bps / 2, r_loaded, iw)[()])
    flows: list[dict[str, Any]] = [
        {
            "name": "background",
            "count": len(sizes),
            "src": "s{i}",
            "dst": "d{i}",
            "cc": "cubic",
            "start_s": 0.0,
        },
    ]
    flows += [
        {
            "name": f"{GROUP_PREFIX}{i}",
            "src": f"s{i}",
            "dst": f"d{i}",
            "cc": "newreno",
            "size_bytes": int(s),
            "start_s": {"uniform": [float(warmup_s), float(warmup_s + jitter_s)]},
            "tcp": {"delayed_ack": False, "initial_window_segments": int(iw)},
        }
        for i, s in enumerate(sizes)
    ]
    return {
        "name": name,
        "seed": int(seed),
        "duration_s": float(np.ceil(warmup_s + jitter_s + 3.0 * longest + 10.0)),
        "sample_interval_ms": 0,
        "tcp": {"preset": PRESET},
        "topology": _pairs(
            sizes,
            capacity_bps,
            rtt_s * 1e3 / 2,
            {"kind": "droptail", "limit_bytes": int(buffer_bytes)},
        ),
        "flows": flows,
    }


def completion_times(flows: pd.DataFrame) -> pd.DataFrame:
    """The finite flows of a run: size_bytes, fct_s (NaN if unfinished), retransmitted_segments, timeouts."""
    sized = flows[flows["group"].astype(str).str.startswith(GROUP_PREFIX)]
    out = pd.DataFrame(
        {
            "size_bytes": pd.to_numeric(sized["size_bytes"]).astype("int64").to_numpy(),
            "fct_s": pd.to_numeric(sized["fct_ns"], errors="coerce").astype(float).to_numpy() / 1e9,
            "retransmitted_segments": sized["retransmitted_segments"].astype("int64").to_numpy(),
            "timeouts": sized["timeouts"].astype("int64").to_numpy(),
        }
    )
    return out.sort_values("size_bytes", kind="stable").reset_index(drop=True)
