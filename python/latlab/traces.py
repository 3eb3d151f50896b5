"""Mahimahi link traces: read, write, convert to and from rate series, and generate.

A Mahimahi trace is text, one integer per line: the millisecond at which one
1500-byte delivery opportunity occurs. A repeated timestamp means several
opportunities in that millisecond; timestamps never decrease; the trace loops
with period = its last timestamp (a file holding just ``1`` is 1500 bytes
per ms, 12 Mbit/s). Mahimahi (Netravali et al., USENIX ATC 2015) reads
these files in ``LinkQueue``; the rules below follow its reader.

What :meth:`Trace.read` accepts
    Lines of ASCII digits without sign, spaces or leading zeros (``0``
    itself is fine), each below 2^31 ms (24.8 days: far beyond any trace,
    and safe to convert to nanoseconds or 32-bit integers anywhere), not
    decreasing, the last one > 0 (a trace must last a nonzero time). Lines
    end in LF or, throughout the file, in CRLF; the final line ending is
    optional. Anything else is a :class:`TraceError` naming the file and the
    line: an empty line, a non-integer, a negative value, a decreasing
    timestamp, mixed line endings, an empty file.

Round trip
    A :class:`Trace` remembers the line ending and whether the file ended
    with one, and :meth:`Trace.write` reproduces them, so any file ``read``
    accepts is written back byte for byte. Those are the only two liberties
    the reader allows, which is what makes the round trip exact. Traces
    made by latlab are canonical: LF line endings, a final LF
    (:meth:`Trace.canonical` converts a read one).

Rates from a trace
    An opportunity with timestamp t is delivered during millisecond
    (t - 1, t]; timestamp 0 is the same instant as the period T of the loop
    before, so it counts in the last millisecond of the period.
    :meth:`Trace.rate_series` bins one period into ``bin_ms`` windows (the
    last one shorter if ``bin_ms`` does not divide T).

Traces from rates (:func:`from_rate_series`)
    A piecewise-constant rate is integrated over a 1 ms grid; the k-th
    opportunity falls on the first millisecond boundary at which the
    cumulative bytes reach k x 1500. Fractional opportunities are carried
    forward, never rounded per interval, so the trace holds the series'
    bytes to within one opportunity (never above them, but for float
    rounding: a tolerance of 1e-6 opportunity). Mahimahi's period
    is the last timestamp, so when the last opportunity falls before the
    end of the series it is moved to the end (the period then matches the
    series' duration; at most that one opportunity moves).

Generators (:func:`constant`, :func:`schedule`, :func:`markov`,
:func:`drawn`) build a rate schedule and convert it the same way; every
random draw comes from ``numpy.random.Generator(PCG64(seed))``, so the same
call gives the same bytes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

OPPORTUNITY_BYTES = 1500
MAX_TIMESTAMP_MS = (
    2**31 - 1
)  # 24.8 days: no real trace is longer; safe in ns and in 32-bit consumers
DATA_PACKAGE = "latlab"
DATA_DIR = ("data", "traces")
SUFFIX = ".trace"
_LF, _CRLF = b"\n", b"\r\n"


class TraceError(ValueError):
    """A trace file or trace parameters that cannot be used; the message names the file and line."""


def _rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


@dataclass(frozen=True, eq=False)
class Trace:
    """Delivery opportunities of a Mahimahi trace, one 1500-byte opportunity per timestamp (ms).

    ``newline`` (``"\\n"`` or ``"\\r\\n"``) and ``final_newline`` describe the
    file layout, so a file read is written back byte for byte.
    """

    timestamps_ms: NDArray[np.int64]
    newline: str = "\n"
    final_newline: bool = True
    source: str = field(default="<trace>", compare=False)

    def __post_init__(self) -> None:
        ts = np.asarray(self.timestamps_ms)
        if ts.ndim != 1 or not len(ts):
            raise TraceError(f"{self.source}: a trace needs at least one timestamp")
        if not np.issubdtype(ts.dtype, np.integer):
            raise TraceError(
                f"{self.source}: timestamps must be integers (ms), got dtype {ts.dtype}"
            )
        ts = ts.astype(np.int64, copy=True)
        ts.setflags(write=False)
        if ts.min() < 0:
            raise TraceError(f"{self.source}: timestamps must be >= 0 ms, got {int(ts.min())}")
        if ts.max() > MAX_TIMESTAMP_MS:
            raise TraceError(
                f"{self.source}: timestamps must be <= {MAX_TIMESTAMP_MS} ms, got {int(ts.max())}"
            )
        down = np.flatnonzero(np.diff(ts) < 0)
        if len(down):
            i = int(down[0]) + 1
            raise TraceError(
                f"{self.source}: timestamp #{i + 1} ({int(ts[i])}) is smaller than the one before it "
                f"({int(ts[i - 1])}); timestamps must not decrease"
            )
        if ts[-1] == 0:
            raise TraceError(f"{self.source}: the last timestamp is the period and must be > 0 ms")
        if self.newline not in ("\n", "\r\n"):
            raise TraceError(
                f"{self.source}: newline must be '\\n' or '\\r\\n', got {self.newline!r}"
            )
        object.__setattr__(self, "timestamps_ms", ts)

    # ----- reading and writing ----------------------------------------------

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Trace:
        """Read a Mahimahi trace file (strict; see the module notes). TraceError names the file and line."""
        return cls.from_bytes(Path(path).read_bytes(), source=str(path))

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<trace>") -> Trace:
        """Parse the bytes of a Mahimahi trace file (``source`` names it in errors)."""
        if not data:
            raise TraceError(
                f"{source}: empty file (a trace holds at least one timestamp, one per line)"
            )
        newline = _CRLF if _CRLF in data else _LF
        final_newline = data.endswith(newline)
        body = data[: -len(newline)] if final_newline else data
        lines = body.split(newline)
        for number, line in enumerate(lines, start=1):
            if not line.isdigit() or (
                line[0] == 0x30 and len(line) > 1
            ):  # bytes.isdigit: ASCII digits only
                raise TraceError(f"{source}:{number}: {_line_problem(line, newline)}")
            if len(line) > len(str(MAX_TIMESTAMP_MS)):
                raise TraceError(
                    f"{source}:{number}: timestamp {line[:30].decode()} ms is above {MAX_TIMESTAMP_MS} "
                    f"(24.8 days, the longest trace latlab reads)"
                )
        values = np.array(lines).astype(np.int64) if len(lines) else np.zeros(0, np.int64)
        too_big = np.flatnonzero(values > MAX_TIMESTAMP_MS)
        if len(too_big):
            number = int(too_big[0]) + 1
            raise TraceError(
                f"{source}:{number}: timestamp {int(values[number - 1])} ms is above "
                f"{MAX_TIMESTAMP_MS} (24.8 days, the longest trace latlab reads)"
            )
        down = np.flatnonzero(np.diff(values) < 0)
        if len(down):
            number = int(down[0]) + 2
            raise TraceError(
                f"{source}:{number}: timestamp {int(values[number - 1])} is smaller than the one "
                f"before it ({int(values[number - 2])}); timestamps must not decrease"
            )
        if values[-1] == 0:
            raise TraceError(
                f"{source}:{len(values)}: the last timestamp is the trace's period and must be > 0 "
                f"(a trace must last a nonzero time)"
            )
        return cls(values, newline=newline.decode(), final_newline=final_newline, source=source)

    def to_bytes(self) -> bytes:
        """The file's bytes, in this trace's layout (line ending, final newline)."""
        text = self.newline.join(map(str, self.timestamps_ms.tolist()))
        if self.final_newline:
            text += self.newline
        return text.encode("ascii")

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the trace file atomically, in this trace's layout (canonical for generated traces)."""
        from latlab import _atomic

        data = self.to_bytes()
        return _atomic.write_with(Path(path), lambda tmp: tmp.write_bytes(data))

    def canonical(self) -> Trace:
        """The same opportunities in canonical layout: LF line endings and a final LF."""
        return Trace(self.timestamps_ms, newline="\n", final_newline=True, source=self.source)

    # ----- what it holds ----------------------------------------------------

    @property
    def period_ms(self) -> int:
        """The loop period: the last timestamp (ms)."""
        return int(self.timestamps_ms[-1])

    @property
    def opportunities(self) -> int:
        return len(self.timestamps_ms)

    @property
    def bytes_per_period(self) -> int:
        return self.opportunities * OPPORTUNITY_BYTES

    @property
    def mean_rate_bps(self) -> float:
        """The long-run delivery rate: the bits of all opportunities over one period."""
        return self.bytes_per_period * 8 / (self.period_ms / 1e3)

    def opportunities_per_ms(self) -> NDArray[np.int64]:
        """Opportunities in each millisecond (t-1, t] of one period; index 0 is the first millisecond."""
        return np.bincount((self.timestamps_ms - 1) % self.period_ms, minlength=self.period_ms)

    def rate_series(self, bin_ms: int = 100) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(start of each bin in s, delivery rate in the bin in bit/s) over one period.

        The last bin is shorter when ``bin_ms`` does not divide the period;
        its rate is over its own length.
        """
        if bin_ms < 1:
            raise TraceError(f"bin_ms must be >= 1, got {bin_ms}")
        per_ms = self.opportunities_per_ms()
        starts_ms = np.arange(0, self.period_ms, bin_ms)
        counts = np.add.reduceat(per_ms, starts_ms)
        lengths_ms = np.diff(np.append(starts_ms, self.period_ms))
        return starts_ms / 1e3, counts * (OPPORTUNITY_BYTES * 8) / (lengths_ms / 1e3)

    def longest_gap_ms(self) -> int:
        """The longest time between consecutive opportunities, across the loop boundary too."""
        ts = self.timestamps_ms
        wrapped = np.append(ts, ts[0] + self.period_ms)
        return int(np.diff(wrapped).max()) if len(ts) > 1 else self.period_ms


def _line_problem(line: bytes, newline: bytes) -> str:
    shown = line[:30].decode("ascii", errors="backslashreplace")
    if not line:
        return "empty line (one integer timestamp per line, no blank lines)"
    if (b"\r" in line or b"\n" in line) and line.replace(b"\r", b"").replace(b"\n", b"").isdigit():
        style = "CRLF" if newline == _CRLF else "LF"
        return f"mixed line endings (this file also uses {style}; use one style throughout)"
    if line.startswith(b"-") and line[1:].isdigit():
        return f"negative timestamp {shown!r}: timestamps are milliseconds >= 0"
    if line.isdigit():
        return f"timestamp {shown!r} has a leading zero (write {int(line)})"
    return f"not an integer timestamp: {shown!r} (one whole number of milliseconds per line)"


# ----- shipped traces -------------------------------------------------------


def _data_dir():  # noqa: ANN202 - importlib Traversable
    return resources.files(DATA_PACKAGE).joinpath(*DATA_DIR)


def builtin_names() -> list[str]:
    """The traces shipped in ``latlab/data/traces`` (file names without ``.trace``)."""
    return sorted(
        p.name.removesuffix(SUFFIX) for p in _data_dir().iterdir() if p.name.endswith(SUFFIX)
    )


def load(name_or_path: str | os.PathLike[str]) -> Trace:
    """A trace from a file path, or a shipped trace's name when no such file exists."""
    path = Path(name_or_path)
    if path.is_dir():
        raise TraceError(f"{path} is a directory; expected a Mahimahi trace file")
    if path.is_file():
        return Trace.read(path)
    name = str(name_or_path).removesuffix(SUFFIX)
    if name in builtin_names():
        return Trace.from_bytes(_data_dir().joinpath(name + SUFFIX).read_bytes(), source=name)
    raise TraceError(f"no such file: {name_or_path} (shipped traces: {', '.join(builtin_names())})")


# ----- rate series -> trace -------------------------------------------------


def _check_rates(rate_bps: NDArray[np.float64], what: str = "rate_bps") -> None:
    bad = np.flatnonzero(~np.isfinite(rate_bps) | (rate_bps < 0))
    if len(bad):
        raise TraceError(
            f"{what}[{int(bad[0])}] must be a finite rate >= 0 bit/s, got {rate_bps[bad[0]]}"
        )


def from_rate_series(
    t_s: ArrayLike,
    rate_bps: ArrayLike,
    duration_s: ArrayLike | None = None,
    end_s: float | None = None,
) -> Trace:
    """A trace delivering a piecewise-constant rate: ``rate_bps[i]`` from ``t_s[i]`` on.

    Interval i ends at ``t_s[i] + duration_s[i]`` when durations are given
    (gaps between intervals deliver nothing), else at ``t_s[i + 1]``; the
    last interval ends at ``end_s``, or lasts as long as the one before it.
    The trace starts at ``t_s[0]`` and its period is the series' length
    rounded to whole milliseconds. Bytes are carried forward across
    intervals, so the trace delivers the series' bytes to within one
    opportunity.
    """
    t = np.asarray(t_s, dtype=np.float64)
    r = np.asarray(rate_bps, dtype=np.float64)
    if t.ndim != 1 or r.shape != t.shape or not len(t):
        raise TraceError(
            f"t_s and rate_bps must be 1-D and of equal, non-zero length (got {t.shape}, {r.shape})"
        )
    if not np.all(np.isfinite(t)):
        raise TraceError("t_s must be finite")
    _check_rates(r)
    if len(t) > 1 and np.any(np.diff(t) <= 0):
        i = int(np.flatnonzero(np.diff(t) <= 0)[0]) + 1
        raise TraceError(f"t_s must increase: t_s[{i}] = {t[i]} after t_s[{i - 1}] = {t[i - 1]}")
    if duration_s is not None:
        d = np.asarray(duration_s, dtype=np.float64)
        if d.shape != t.shape or not np.all(np.isfinite(d) & (d > 0)):
            raise TraceError("duration_s must hold one positive length per interval")
        ends = t + d
        overlap = np.flatnonzero(ends[:-1] > t[1:] + 1e-9)
        if len(overlap):
            i = int(overlap[0])
            raise TraceError(
                f"interval {i} ({t[i]} s + {d[i]} s) overlaps the next one, which starts at {t[i + 1]} s"
            )
        ends[:-1] = np.minimum(
            ends[:-1], t[1:]
        )  # a touch past the next start (float noise) ends there
    else:
        if end_s is None:
            if len(t) < 2:
                raise TraceError("one rate needs its end (end_s) or its duration (duration_s)")
            end_s = t[-1] + (t[-1] - t[-2])
        if not end_s > t[-1]:
            raise TraceError(f"end_s ({end_s}) must come after the last interval's start ({t[-1]})")
        ends = np.append(t[1:], end_s)
    origin = t[0]
    period_ms = int(round((ends[-1] - origin) * 1e3))
    if period_ms < 1:
        raise TraceError(f"the series lasts {ends[-1] - origin:.6f} s; a trace needs at least 1 ms")
    # Cumulative bytes are piecewise linear: knots at every interval's start and end. Knot times are
    # snapped to the nanosecond so that decimal times read from a file (0.007 s) land on the ms grid.
    starts_ms, ends_ms = np.round((t - origin) * 1e3, 6), np.round((ends - origin) * 1e3, 6)
    bytes_in = r / 8 * (ends - t)
    after = np.cumsum(bytes_in)
    before = np.concatenate(
        [[0.0], after[:-1]]
    )  # exactly the previous interval's end: no float seam
    knots_ms = np.column_stack([starts_ms, ends_ms]).ravel()
    knots_bytes = np.column_stack([before, after]).ravel()
    grid_ms = np.arange(period_ms + 1, dtype=np.float64)
    cumulative = np.interp(grid_ms, knots_ms, knots_bytes)
    # A tolerance of 1e-6 opportunity (1.5 mB) so that k x 1500 B, up to float rounding summed over
    # many intervals, counts as k opportunities.
    whole = np.floor(cumulative / OPPORTUNITY_BYTES + 1e-6).astype(np.int64)
    per_ms = np.diff(whole)
    if whole[-1] < 1:
        raise TraceError(
            f"the series delivers {cumulative[-1]:.0f} bytes, less than one {OPPORTUNITY_BYTES}-byte "
            f"opportunity; a trace needs at least one"
        )
    timestamps = np.repeat(np.arange(1, period_ms + 1, dtype=np.int64), per_ms)
    timestamps[-1] = period_ms  # Mahimahi's period is the last timestamp (see the module notes)
    return Trace(timestamps, source="<rate series>")


def _read_csv_columns(
    path: str | os.PathLike[str], required: Sequence[str], optional: Sequence[str] = ()
) -> dict[str, NDArray[np.float64]]:
    """Numeric columns of a CSV whose header row names them (any order, other columns ignored).

    Errors name the file, the row and the column. time_s may be any finite
    number; every other column must be >= 0 (duration_s > 0).
    """
    import csv

    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not a UTF-8 text CSV file") from None
    names = ", ".join(required)
    if not rows:
        raise TraceError(f"{path}: empty file (expected a header row naming {names})")
    header = [h.strip() for h in rows[0]]
    for col in required:
        if col not in header:
            extra = f"; {', '.join(optional)} optional" if optional else ""
            raise TraceError(
                f"{path}: missing column {col} (the header row must name {names}{extra})"
            )
    cols = [*required, *(c for c in optional if c in header)]
    index = {c: header.index(c) for c in cols}
    values: dict[str, list[float]] = {c: [] for c in cols}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        for c in cols:
            cell = row[index[c]].strip() if index[c] < len(row) else ""
            try:
                v = float(cell)
            except ValueError:
                raise TraceError(f"{path}:{number}: {c}: {cell!r} is not a number") from None
            if not math.isfinite(v) or (c != "time_s" and v < 0) or (c == "duration_s" and v == 0):
                expected = (
                    "a finite number" if c == "time_s" else "> 0" if c == "duration_s" else ">= 0"
                )
                raise TraceError(f"{path}:{number}: {c} must be {expected}, got {cell}")
            values[c].append(v)
    if not values[required[0]]:
        raise TraceError(f"{path}: no rows after the header")
    return {c: np.array(v) for c, v in values.items()}


def read_series_csv(path: str | os.PathLike[str]) -> tuple[NDArray, NDArray, NDArray | None]:
    """(time_s, rate_bps, duration_s or None) from a CSV with a header row naming those columns.

    Columns may come in any order; others are ignored; duration_s is
    optional. Errors name the file, the row and the column.
    """
    cols = _read_csv_columns(path, ("time_s", "rate_bps"), ("duration_s",))
    return cols["time_s"], cols["rate_bps"], cols.get("duration_s")


def read_rates_csv(path: str | os.PathLike[str]) -> NDArray[np.float64]:
    """Measured rates (bit/s) from a CSV with a header row naming a rate_bps column (for :class:`Empirical`)."""
    return _read_csv_columns(path, ("rate_bps",))["rate_bps"]


def series_csv_text(trace: Trace, bin_ms: int) -> str:
    """``time_s,rate_bps,duration_s`` rows of the trace's rate series (exact: reads back to the same bytes)."""
    t_s, rate = trace.rate_series(bin_ms)
    lengths_ms = np.diff(np.append(np.round(t_s * 1e3).astype(np.int64), trace.period_ms))
    lines = ["time_s,rate_bps,duration_s"]
    lines += [
        f"{t:.3f},{float(r)!r},{d / 1e3:.3f}" for t, r, d in zip(t_s, rate, lengths_ms, strict=True)
    ]
    return "\n".join(lines) + "\n"


# ----- generators -----------------------------------------------------------


def _check_duration(duration_s: float) -> None:
    if not (math.isfinite(duration_s) and duration_s >= 1e-3):
        raise TraceError(f"duration_s must be at least 0.001 s (one millisecond), got {duration_s}")


def constant(rate_bps: float, duration_s: float) -> Trace:
    """A constant rate; 12 Mbit/s is one opportunity per millisecond."""
    _check_duration(duration_s)
    if not (math.isfinite(rate_bps) and rate_bps > 0):
        raise TraceError(f"rate_bps must be > 0, got {rate_bps}")
    return from_rate_series([0.0], [rate_bps], end_s=duration_s)


def schedule(steps: Sequence[Sequence[float]], duration_s: float) -> Trace:
    """Piecewise-constant rates: ``steps`` = [[t_s, rate_bps], ...], the first at t = 0, up to ``duration_s``."""
    _check_duration(duration_s)
    if not len(steps):
        raise TraceError("a schedule needs at least one [t_s, rate_bps] step")
    arr = np.asarray(steps, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise TraceError("schedule steps must be [t_s, rate_bps] pairs")
    if arr[0, 0] != 0:
        raise TraceError(f"the first schedule step must start at t = 0 s, got {arr[0, 0]}")
    if arr[-1, 0] >= duration_s:
        raise TraceError(
            f"every step must start before duration_s = {duration_s} s, got one at {arr[-1, 0]} s"
        )
    return from_rate_series(arr[:, 0], arr[:, 1], end_s=duration_s)


def markov_series(
    good_bps: float,
    bad_bps: float,
    mean_good_s: float,
    mean_bad_s: float,
    duration_s: float,
    seed: int,
    sigma: float = 0.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(start times in s, rates in bit/s) of a two-state good/bad channel; see :func:`markov`."""
    _check_duration(duration_s)
    for name, v in (("good_bps", good_bps), ("bad_bps", bad_bps), ("sigma", sigma)):
        if not (math.isfinite(v) and v >= 0):
            raise TraceError(f"{name} must be >= 0, got {v}")
    for name, v in (("mean_good_s", mean_good_s), ("mean_bad_s", mean_bad_s)):
        if not (math.isfinite(v) and v > 0):
            raise TraceError(f"{name} must be > 0 s, got {v}")
    rng = _rng(seed)
    good = bool(
        rng.random() < mean_good_s / (mean_good_s + mean_bad_s)
    )  # start in the stationary law
    starts, rates = [], []
    now = 0.0
    while now < duration_s:
        mean_s, rate = (mean_good_s, good_bps) if good else (mean_bad_s, bad_bps)
        sojourn = rng.exponential(mean_s)
        if (
            sigma > 0
        ):  # each visit's rate varies log-normally around the state's rate, mean preserved
            rate *= math.exp(sigma * rng.standard_normal() - sigma**2 / 2)
        starts.append(now)
        rates.append(rate)
        now += sojourn
        good = not good
    return np.array(starts), np.array(rates)


def markov(
    good_bps: float,
    bad_bps: float,
    mean_good_s: float,
    mean_bad_s: float,
    duration_s: float,
    seed: int,
    sigma: float = 0.0,
) -> Trace:
    """A Gilbert-style two-state channel: good and bad states with exponential sojourns.

    The chain alternates between a good state (rate ``good_bps``, mean stay
    ``mean_good_s``) and a bad one (``bad_bps``, ``mean_bad_s``), starting
    in a state drawn from the stationary law. Its long-run mean rate is
    (good_bps * mean_good_s + bad_bps * mean_bad_s) / (mean_good_s +
    mean_bad_s) (:func:`markov_mean_bps`). ``sigma`` > 0 draws each visit's
    rate log-normally around the state's rate (mean preserved, so the
    long-run mean is unchanged).
    """
    starts, rates = markov_series(
        good_bps, bad_bps, mean_good_s, mean_bad_s, duration_s, seed, sigma
    )
    return from_rate_series(starts, rates, end_s=duration_s)


def markov_mean_bps(
    good_bps: float, bad_bps: float, mean_good_s: float, mean_bad_s: float
) -> float:
    """The stationary mean rate of :func:`markov`'s channel."""
    return (good_bps * mean_good_s + bad_bps * mean_bad_s) / (mean_good_s + mean_bad_s)


_NORMAL = NormalDist()


def _normal_cdf(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.array([_NORMAL.cdf(float(v)) for v in z])


@dataclass(frozen=True)
class LogNormal:
    """Rates log-normal around ``median_bps`` with log-spread ``sigma``."""

    median_bps: float
    sigma: float

    def from_normal(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.median_bps * np.exp(self.sigma * z)

    def check(self) -> None:
        if not (self.median_bps > 0 and self.sigma >= 0):
            raise TraceError(
                f"lognormal needs median_bps > 0 and sigma >= 0, got {self.median_bps}, {self.sigma}"
            )


@dataclass(frozen=True)
class Uniform:
    """Rates uniform between ``low_bps`` and ``high_bps``."""

    low_bps: float
    high_bps: float

    def from_normal(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        return self.low_bps + (self.high_bps - self.low_bps) * _normal_cdf(z)

    def check(self) -> None:
        if not (0 <= self.low_bps <= self.high_bps):
            raise TraceError(
                f"uniform needs 0 <= low_bps <= high_bps, got {self.low_bps}, {self.high_bps}"
            )


@dataclass(frozen=True)
class Empirical:
    """Rates drawn from measured samples (their empirical quantile function, linear between samples)."""

    samples_bps: tuple[float, ...]

    def from_normal(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.quantile(np.asarray(self.samples_bps), _normal_cdf(z))

    def check(self) -> None:
        s = np.asarray(self.samples_bps, dtype=np.float64)
        if not len(s):
            raise TraceError("empirical needs at least one sample")
        _check_rates(s, "samples_bps")


RateDistribution = LogNormal | Uniform | Empirical


def drawn_series(
    dist: RateDistribution,
    interval_ms: int,
    duration_s: float,
    seed: int,
    correlation: float = 0.0,
    min_bps: float | None = None,
    max_bps: float | None = None,
) -> tuple[NDArray, NDArray]:
    """(start times in s, rates in bit/s) of :func:`drawn`."""
    _check_duration(duration_s)
    dist.check()
    if interval_ms < 1:
        raise TraceError(f"interval_ms must be >= 1, got {interval_ms}")
    if not 0 <= correlation < 1:
        raise TraceError(f"correlation must be in [0, 1), got {correlation}")
    if min_bps is not None and max_bps is not None and min_bps > max_bps:
        raise TraceError(f"min_bps ({min_bps}) must not exceed max_bps ({max_bps})")
    n = math.ceil(duration_s * 1e3 / interval_ms)
    eps = _rng(seed).standard_normal(n)
    # A stationary AR(1) in the normal score: z_k = rho z_{k-1} + sqrt(1 - rho^2) eps_k keeps z ~ N(0, 1),
    # so the marginal law of the rates is the distribution's, whatever the correlation.
    z = np.empty(n)
    z[0] = eps[0]
    scale = math.sqrt(1 - correlation**2)
    for k in range(1, n):
        z[k] = correlation * z[k - 1] + scale * eps[k]
    rates = dist.from_normal(z)
    if min_bps is not None or max_bps is not None:
        rates = np.clip(rates, min_bps, max_bps)
    return np.arange(n) * interval_ms / 1e3, rates


def drawn(
    dist: RateDistribution,
    interval_ms: int,
    duration_s: float,
    seed: int,
    correlation: float = 0.0,
    min_bps: float | None = None,
    max_bps: float | None = None,
) -> Trace:
    """Rates drawn from ``dist``, one per ``interval_ms``, held constant within the interval.

    ``correlation`` is the lag-one correlation of successive draws' normal
    scores (0: independent; 0.9 at 100 ms: slow fading), applied through a
    Gaussian copula so the rates keep ``dist``'s marginal law; rates are then
    clipped to [min_bps, max_bps] when given.
    """
    starts, rates = drawn_series(dist, interval_ms, duration_s, seed, correlation, min_bps, max_bps)
    return from_rate_series(starts, rates, end_s=duration_s)


def summary(trace: Trace, bin_ms: int = 100) -> dict[str, float | int]:
    """Period, opportunities, mean rate and the spread of the rate in ``bin_ms`` bins (bit/s)."""
    _, rate = trace.rate_series(bin_ms)
    p10, p50, p90 = np.percentile(rate, [10, 50, 90])
    return {
        "period_ms": trace.period_ms,
        "opportunities": trace.opportunities,
        "mean_bps": trace.mean_rate_bps,
        "min_bps": float(rate.min()),
        "p10_bps": float(p10),
        "p50_bps": float(p50),
        "p90_bps": float(p90),
        "max_bps": float(rate.max()),
        "longest_gap_ms": trace.longest_gap_ms(),
        "bin_ms": bin_ms,
    }


def plot_rate(
    trace: Trace, path: str | os.PathLike[str], bin_ms: int = 100, title: str | None = None
) -> Path:
    """A PNG of the trace's delivery rate over one period (Mbit/s, ``bin_ms`` bins) with its mean.

    Drawn with matplotlib's object API on the Agg canvas (no pyplot), so it
    works headless and never switches a notebook's backend.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from latlab import _atomic

    t_s, rate = trace.rate_series(bin_ms)
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.stairs(
        rate / 1e6,
        np.append(t_s, trace.period_ms / 1e3),
        baseline=None,
        color="C0",
        linewidth=1,
        label=f"rate ({bin_ms} ms bins)",
    )
    ax.axhline(
        trace.mean_rate_bps / 1e6,
        color="C3",
        linestyle="--",
        linewidth=1,
        label=f"mean {trace.mean_rate_bps / 1e6:.2f} Mbit/s",
    )
    ax.set_xlabel("time (s)")
    ax.set_ylabel("delivery rate (Mbit/s)")
    ax.set_xlim(0, trace.period_ms / 1e3)
    ax.set_ylim(bottom=0)
    name = title if title is not None else trace.source
    ax.set_title(
        f"{name}: {trace.opportunities:,} opportunities, period {trace.period_ms / 1e3:g} s",
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    return _atomic.write_with(Path(path), lambda tmp: fig.savefig(tmp, format="png", dpi=110))
