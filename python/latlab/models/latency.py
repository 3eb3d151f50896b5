"""Short-flow completion time, ideal time and protocol efficiency (docs/models/latency-model.md).

Symbols follow docs/models/latency-model.md: O flow size (bits), S segment size (bits), C capacity
(bit/s), R round-trip time (s), I initial window (segments), P number of
rounds in which the sender idles. Every function takes numpy arrays (or
scalars) and broadcasts them against each other, so a Monte-Carlo draw of a
million (C, R) pairs is one call, with no Python loop over samples.

Units are the caller's, as long as they agree: give O, S and C all in payload
bits (measured goodput as C, S = MSS) or all in wire bits (link rate as C,
S = MSS + headers; :func:`wire_bits` converts a size in bytes).

Variants of L_S, the completion time of a TCP flow, handshake included:

``"exact"``
    The lossless slow-start model derived in docs/models/latency-model.md: window k holds
    I·2^(k−1) segments; after window k the sender idles for
    R + S/C − I·2^(k−1)·S/C when that is positive and data remains.
    ``P = min(Q, K − 1)`` with ``Q = max(0, ceil(log2 x))``,
    ``x = (R + S/C)/(I·S/C)`` and ``K = ceil(log2(1 + O/(I·S)))``.
    With I = 1 this is the textbook slow-start latency model. latlab's packet
    simulator matches it within one segment time.
``"published"``
    The study's formula as printed: ``P = min(ceil(log2(1 + x)), K)``. It
    counts an idle round after the last window, so a flow that fits in the
    initial window pays an extra R + S/C − I·S/C.

Both give ``L = 2R + O/C + P·(R + S/C) − (2^P − 1)·I·S/C``.

Options the study did not have:

* ``tfo=True``: TCP Fast Open (RFC 7413) sends the first window with the
  SYN, so the set-up round overlaps the first data round: L − R.
* ``delayed_ack=DelayedAck(...)``: the receiver ACKs every b segments (or
  after a timeout T_d). Slow start then grows the window by one segment per
  ACK (RFC 5681 §3.1 without byte counting, as latlab's TCP does), so
  w_{k+1} = w_k + ceil(w_k / b); the first ACK of a round returns b·S/C + R
  after the round started. ACK pairing is followed across rounds: a round's
  left-over segment (window not a multiple of b) is ACKed by the timer when
  that expires before the next round arrives, else it pairs with the next
  round's first segment; left-over segments at the end of the flow wait for
  the timer. With b = 1 this is the exact model. It is an approximation (the
  window is grown by ceil(w/b) per round whatever the pairing, and segments
  released late by a timer ACK are not moved); the efficiency study measures
  how close it comes to the simulator.
* ``n_flows=N`` in :func:`efficiency`: N concurrent flows share C; the flow
  gets C/N and sees the loaded RTT R_S, the ideal protocol gets its share at
  once and sees the unloaded RTT R_O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Variant = Literal["exact", "published"]
VARIANTS: tuple[str, ...] = ("exact", "published")

#: Linux MSS with the timestamp option, the study's segment size (payload bytes).
MSS_BYTES = 1448
#: IPv4 + TCP + timestamp option header bytes (latlab's "linux" preset).
HEADER_BYTES = 52
#: The study's (and Linux's, RFC 6928) initial window.
IW_SEGMENTS = 10

# ceil(log2(v)) must not jump a step because v = 2^k came out as 2^k(1 + 1e-16).
_LOG_EPS = 1e-9


@dataclass(frozen=True)
class DelayedAck:
    """Receiver delayed-ACK policy: an ACK every ``segments`` segments, or after ``timeout_s``.

    The defaults are Linux's (and latlab's "linux" preset): 2 segments, 40 ms.
    """

    segments: int = 2
    timeout_s: float = 0.040

    def __post_init__(self) -> None:
        if int(self.segments) != self.segments or self.segments < 1:
            raise ValueError(
                f"delayed ACK segments must be a positive integer, got {self.segments!r}"
            )
        if not self.timeout_s >= 0:
            raise ValueError(f"delayed ACK timeout must be >= 0 s, got {self.timeout_s!r}")


def wire_bits(
    size_bytes: ArrayLike, mss_bytes: int = MSS_BYTES, header_bytes: int = HEADER_BYTES
) -> NDArray[np.float64]:
    """Bits on the wire for ``size_bytes`` of payload: every segment carries ``header_bytes``."""
    size = _positive(size_bytes, "flow size")
    segments = np.ceil(size / mss_bytes)
    return 8.0 * (size + segments * header_bytes)


def segment_bits(mss_bytes: int = MSS_BYTES, header_bytes: int = 0) -> float:
    """S in bits: the payload (``header_bytes = 0``) or the whole packet."""
    return 8.0 * (mss_bytes + header_bytes)


def _positive(value: ArrayLike, what: str) -> NDArray[np.float64]:
    arr = np.asarray(value, dtype=np.float64)
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} must be finite numbers")
    if arr.size and not np.all(arr > 0):
        raise ValueError(f"{what} must be > 0, got {float(np.min(arr)):g}")
    return arr


def _ceil_log2(v: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.ceil(np.log2(v) - _LOG_EPS)


def idle_rounds(
    o_bits: ArrayLike,
    c_bps: ArrayLike,
    rtt_s: ArrayLike,
    s_bits: ArrayLike = segment_bits(),
    iw: ArrayLike = IW_SEGMENTS,
    variant: Variant = "exact",
) -> NDArray[np.float64]:
    """P: the number of rounds in which the sender idles, waiting for ACKs (window-limited)."""
    o, c, r = np.asarray(o_bits, float), np.asarray(c_bps, float), np.asarray(rtt_s, float)
    s, i = np.asarray(s_bits, float), np.asarray(iw, float)
    t = s / c
    x = (r + t) / (i * t)
    k = np.maximum(_ceil_log2(1.0 + o / (i * s)), 1.0)  # windows needed
    if variant == "exact":
        q = np.maximum(_ceil_log2(x), 0.0)
        return np.maximum(np.minimum(q, k - 1.0), 0.0)
    if variant == "published":
        return np.minimum(_ceil_log2(1.0 + x), k)
    raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")


def completion_time(
    o_bits: ArrayLike,
    c_bps: ArrayLike,
    rtt_s: ArrayLike,
    s_bits: ArrayLike = segment_bits(),
    iw: ArrayLike = IW_SEGMENTS,
    variant: Variant = "exact",
    tfo: bool = False,
    delayed_ack: DelayedAck | None = None,
) -> NDArray[np.float64]:
    """L_S: seconds from the first SYN to the ACK of the last byte (lossless, no competing traffic).

    Args:
        o_bits: flow size O (bits).
        c_bps: capacity C (bit/s) available to the flow.
        rtt_s: RTT R (s) the flow sees (its handshake RTT).
        s_bits: segment size S (bits), in the same units as O and C.
        iw: initial window I (segments); scalar when ``delayed_ack`` is set.
        variant: ``"exact"`` or ``"published"`` (see the module docstring).
        tfo: TCP Fast Open: data rides on the SYN, one RTT less.
        delayed_ack: receiver delayed-ACK policy (exact variant only).
    """
    o = _positive(o_bits, "flow size")
    c = _positive(c_bps, "capacity")
    r = np.asarray(rtt_s, dtype=np.float64)
    if r.size and not np.all(r >= 0):
        raise ValueError(f"RTT must be >= 0 s, got {float(np.min(r)):g}")
    s = _positive(s_bits, "segment size")
    i = _positive(iw, "initial window")
    t = s / c
    if delayed_ack is not None and delayed_ack.segments > 1:
        if variant != "exact":
            raise ValueError("the delayed-ACK model extends the exact model; use variant='exact'")
        l_s = _completion_time_delayed_ack(o, c, r, s, i, delayed_ack)
    else:
        p = idle_rounds(o, c, r, s, i, variant)
        l_s = 2.0 * r + o / c + p * (r + t) - (np.exp2(p) - 1.0) * i * t
    if tfo:
        l_s = l_s - r
    return l_s


def _completion_time_delayed_ack(
    o: NDArray[np.float64],
    c: NDArray[np.float64],
    r: NDArray[np.float64],
    s: NDArray[np.float64],
    i: NDArray[np.float64],
    dack: DelayedAck,
) -> NDArray[np.float64]:
    """The exact model with ACKs every b segments: a loop over rounds (tens), vectorised over samples."""
    if i.ndim and i.size != 1:
        raise ValueError("the delayed-ACK model takes one initial window (a scalar iw)")
    iw = int(round(float(i.reshape(-1)[0])))
    if iw != float(i.reshape(-1)[0]):
        raise ValueError(
            f"initial window must be a whole number of segments, got {float(i.reshape(-1)[0])!r}"
        )
    b, td = int(dack.segments), float(dack.timeout_s)
    o, c, r, s = np.broadcast_arrays(o, c, r, s)
    t = s / c
    n = np.ceil(o / s - _LOG_EPS)  # segments
    # Window sizes until their cumulative sum covers the largest flow.
    windows, total = [iw], iw
    n_max = float(n.max()) if n.size else 0.0
    while total < n_max:
        windows.append(windows[-1] + -(-windows[-1] // b))
        total += windows[-1]
    w = np.asarray(windows, dtype=np.float64)
    cum = np.cumsum(w)
    k_needed = np.searchsorted(cum, n, side="left") + 1  # K: windows needed
    idle = np.zeros(o.shape)
    carry = np.zeros(
        o.shape
    )  # segments not yet ACKed when a round starts (ACK pairing carries over)
    for k, wk in enumerate(w[:-1], start=1):
        active = k < k_needed
        # The round's first ACK: after the (b − carry)-th segment, or, for a
        # window too small for that, when the timer started by its first segment expires.
        need = b - carry
        first_ack = np.where(wk >= need, need * t, t + td)
        gap = np.maximum(r + first_ack - wk * t, 0.0)
        # A left-over segment is ACKed by its timer if that expires before the
        # next round's first segment arrives; otherwise it pairs with that segment.
        left = np.mod(carry + wk, b)
        timer_at = (wk - left + 1.0) * t + td
        next_arrival = wk * t + gap + t
        carry_next = np.where((left > 0) & (timer_at <= next_arrival), 0.0, left)
        idle += np.where(active, gap, 0.0)
        carry = np.where(active, carry_next, carry)
    # Left-over segments at the end are ACKed by the timer, started by the first of them.
    last_window = n - np.where(k_needed > 1, cum[np.maximum(k_needed - 2, 0)], 0.0)
    left_over = np.mod(carry + last_window, b)
    last_ack_wait = np.where(left_over != 0, np.maximum(td - (left_over - 1.0) * t, 0.0), 0.0)
    return 2.0 * r + o / c + idle + last_ack_wait


def ideal_time(
    o_bits: ArrayLike, c_bps: ArrayLike, rtt_s: ArrayLike, n_flows: int = 1
) -> NDArray[np.float64]:
    """L_O: one RTT of set-up, then the flow's share C/N at once: R + N·O/C.

    (The spec writes the multi-flow ideal as R_O + (O/C)/N; a transfer cannot
    get faster as more flows share the link, so latlab reads it as
    O/(C/N), the time at the flow's fair share.)
    """
    o = _positive(o_bits, "flow size")
    c = _positive(c_bps, "capacity")
    _check_flows(n_flows)
    return np.asarray(rtt_s, dtype=np.float64) + n_flows * o / c


def efficiency(
    o_bits: ArrayLike,
    c_bps: ArrayLike,
    rtt_s: ArrayLike,
    s_bits: ArrayLike = segment_bits(),
    iw: ArrayLike = IW_SEGMENTS,
    variant: Variant = "exact",
    tfo: bool = False,
    delayed_ack: DelayedAck | None = None,
    n_flows: int = 1,
    rtt_loaded_s: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """Protocol efficiency E = L_O / L_S.

    Single flow (``n_flows = 1``): both use C and R. With N concurrent
    flows the flow gets C/N and sees ``rtt_loaded_s`` (R_S, the RTT while
    N − 1 flows load the link; defaults to ``rtt_s``); the ideal protocol
    gets C/N at once and sees the unloaded ``rtt_s`` (R_O).
    """
    _check_flows(n_flows)
    r_s = rtt_s if rtt_loaded_s is None else rtt_loaded_s
    c = np.asarray(c_bps, dtype=np.float64)
    l_s = completion_time(o_bits, c / n_flows, r_s, s_bits, iw, variant, tfo, delayed_ack)
    return ideal_time(o_bits, c, rtt_s, n_flows) / l_s


def _check_flows(n_flows: int) -> None:
    if int(n_flows) != n_flows or n_flows < 1:
        raise ValueError(f"number of flows must be a positive integer, got {n_flows!r}")
