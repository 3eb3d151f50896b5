"""Network profiles: distributions of throughput and RTT that drive the latency model.

A profile holds two marginal distributions, the throughput measured on the
downlink (kbit/s) and the handshake RTT (ms), a rule that turns throughput
into the capacity C of the model, and optionally the RTT a new flow sees
while one background flow loads the link (the "loaded" RTT, R_S).

Distributions come in two kinds:

:class:`PercentileDistribution` (from a handful of published percentiles)
    Between two given percentiles, log(value) is linear in the standard
    normal score z = Φ⁻¹(p): each segment is the log-normal through its two
    end points, and a log-normal through all the points if they happen to
    lie on one. Outside the outermost given percentiles the value is held at
    the outermost one (no mass is invented beyond what was measured; the
    mean is then slightly conservative, percentiles of monotone functions of
    the draw are unaffected). Draws are z ~ N(0, 1) mapped through this
    quantile function.
:class:`SampleDistribution` (from measurements, one value per row)
    The smoothed bootstrap the study used: pick a measurement uniformly and
    add Gaussian kernel noise of width h = s/sqrt(n) (s the sample standard
    deviation, n the number of measurements). A draw that lands at or below
    zero is reflected about zero (|x|), which keeps the smoothed density on
    the positive half-line.

Built-in profiles are TOML files shipped in ``latlab/data/profiles``: the
study's Table I values for 3G, 3.5G and 4G (``<name>.toml``), and, for 3.5G
and 4G, the loaded-RTT distribution latlab's simulator produced
(``<name>-loaded.toml``, written by :mod:`latlab.models.loaded_rtt`).

User measurements: a CSV with columns ``throughput_kbps`` and ``rtt_ms``,
one row per measurement (a header row naming the columns, in any order, or
no header and exactly those two columns in that order); see
:func:`read_samples_csv`.
"""

from __future__ import annotations

import csv
import math
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from statistics import NormalDist
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

SAMPLE_COLUMNS = ("throughput_kbps", "rtt_ms")
LOADED_COLUMNS = ("rtt_ms",)
LOADED_SUFFIX = "-loaded"
DATA_PACKAGE = "latlab"
DATA_DIR = ("data", "profiles")


class ProfileError(ValueError):
    """A profile or measurement file that cannot be used; the message says what and where."""


class Distribution(Protocol):
    """What the Monte-Carlo needs from a distribution of positive values."""

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.float64]: ...

    def quantile(self, q: float | Sequence[float] | NDArray[np.float64]) -> NDArray[np.float64]: ...

    def describe(self) -> str: ...


_NORMAL = NormalDist()


@dataclass(frozen=True)
class PercentileDistribution:
    """A distribution known by a few percentiles (log-normal between them; see the module docstring)."""

    percentiles: tuple[float, ...]
    values: tuple[float, ...]
    _z: NDArray[np.float64] = field(init=False, repr=False, compare=False)
    _log_v: NDArray[np.float64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        p = tuple(float(x) for x in self.percentiles)
        v = tuple(float(x) for x in self.values)
        if len(p) != len(v) or not p:
            raise ProfileError(
                f"percentiles and values must be non-empty lists of one length, got {len(p)} and {len(v)}"
            )
        if not all(0.0 < x < 100.0 for x in p):
            raise ProfileError(f"percentiles must lie strictly between 0 and 100, got {list(p)}")
        if any(b <= a for a, b in zip(p, p[1:])):
            raise ProfileError(f"percentiles must increase, got {list(p)}")
        if not all(math.isfinite(x) and x > 0 for x in v):
            raise ProfileError(f"values must be positive numbers, got {list(v)}")
        if any(b < a for a, b in zip(v, v[1:])):
            raise ProfileError(f"values must not decrease with the percentile, got {list(v)}")
        object.__setattr__(self, "percentiles", p)
        object.__setattr__(self, "values", v)
        object.__setattr__(self, "_z", np.array([_NORMAL.inv_cdf(x / 100.0) for x in p]))
        object.__setattr__(self, "_log_v", np.log(np.array(v)))

    def _from_z(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.exp(np.interp(z, self._z, self._log_v))

    def quantile(self, q: float | Sequence[float] | NDArray[np.float64]) -> NDArray[np.float64]:
        """The value below which a fraction ``q`` (0 < q < 1) of the draws fall."""
        qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
        if not np.all((qs > 0) & (qs < 1)):
            raise ValueError(
                f"quantile levels must lie strictly between 0 and 1, got {qs.tolist()}"
            )
        z = np.array([_NORMAL.inv_cdf(float(x)) for x in qs.ravel()]).reshape(qs.shape)
        out = self._from_z(z)
        # At a given percentile, the given value itself (not exp(log(v)) with rounding).
        for p, v in zip(self.percentiles, self.values):
            out[np.abs(qs * 100.0 - p) < 1e-9] = v
        return out

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.float64]:
        return self._from_z(rng.standard_normal(int(n)))

    def describe(self) -> str:
        return ", ".join(f"p{_fmt(p)} {_fmt(v)}" for p, v in zip(self.percentiles, self.values))


@dataclass(frozen=True, eq=False)
class SampleDistribution:
    """Measurements smoothed with a Gaussian kernel of width s/sqrt(n) (the study's smoothing)."""

    values: NDArray[np.float64]

    def __post_init__(self) -> None:
        v = np.asarray(self.values, dtype=np.float64).ravel()
        if v.size < 2:
            raise ProfileError(f"needs at least 2 measurements, got {v.size}")
        if not np.all(np.isfinite(v) & (v > 0)):
            raise ProfileError("measurements must be positive finite numbers")
        v.setflags(write=False)
        object.__setattr__(self, "values", v)

    @property
    def bandwidth(self) -> float:
        """Kernel width h = s/sqrt(n)."""
        return float(np.std(self.values, ddof=1) / math.sqrt(self.values.size))

    def sample(
        self, n: int, rng: np.random.Generator, rows: NDArray[np.intp] | None = None
    ) -> NDArray[np.float64]:
        """``n`` smoothed draws; ``rows`` picks the measurements (to keep paired columns together)."""
        if rows is None:
            rows = rng.integers(0, self.values.size, size=int(n))
        x = np.abs(self.values[rows] + self.bandwidth * rng.standard_normal(rows.size))
        # |x| = 0 has probability zero but would make a capacity of 0: fall back to the measurement.
        return np.where(x > 0, x, self.values[rows])

    def quantile(self, q: float | Sequence[float] | NDArray[np.float64]) -> NDArray[np.float64]:
        """Empirical quantiles of the measurements (the kernel is narrow: h = s/sqrt(n))."""
        qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
        if not np.all((qs > 0) & (qs < 1)):
            raise ValueError(
                f"quantile levels must lie strictly between 0 and 1, got {qs.tolist()}"
            )
        return np.quantile(self.values, qs)

    def describe(self) -> str:
        p5, p50, p95 = self.quantile([0.05, 0.5, 0.95])
        return f"{self.values.size} samples (p5 {_fmt(p5)}, p50 {_fmt(p50)}, p95 {_fmt(p95)}; kernel h {_fmt(self.bandwidth)})"


def _fmt(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.4g}"


@dataclass(frozen=True)
class Draws:
    """One Monte-Carlo draw per element: capacity C (bit/s), unloaded RTT R_O and loaded RTT R_S (s)."""

    capacity_bps: NDArray[np.float64]
    rtt_s: NDArray[np.float64]
    rtt_loaded_s: NDArray[np.float64] | None = None


@dataclass(frozen=True)
class Profile:
    """A network: throughput and RTT distributions, the capacity rule, and optionally the loaded RTT.

    Attributes:
        name: what ``--profile`` takes.
        throughput_kbps: measured downlink throughput (kbit/s).
        rtt_ms: handshake RTT without background traffic (ms), R_O.
        capacity: how C is drawn from the throughput: ``"sampled"`` (every
            draw from the whole distribution) or a quantile level such as
            0.95 (C fixed at that percentile: the study's Table I mixes short
            and long flows, and its 95th percentile stands for the long-flow
            throughput the study used as C).
        loaded_rtt_ms: handshake RTT while one background flow runs (ms), R_S.
        buffer_bytes: the per-user bottleneck buffer assumed when latlab
            simulates the loaded RTT.
        paired: throughput and RTT come from the same rows (user samples):
            draw them together, keeping any correlation.
        loaded_info: provenance of the loaded RTT (how it was simulated).
    """

    name: str
    throughput_kbps: Distribution
    rtt_ms: Distribution
    capacity: str | float = "sampled"
    description: str = ""
    source: str = ""
    loaded_rtt_ms: Distribution | None = None
    buffer_bytes: int | None = None
    paired: bool = False
    loaded_info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cap = self.capacity
        if isinstance(cap, str):
            if cap != "sampled":
                raise ProfileError(
                    f"profile {self.name}: capacity must be 'sampled' or a quantile level, got {cap!r}"
                )
        elif not (isinstance(cap, (int, float)) and 0 < float(cap) < 1):
            raise ProfileError(
                f"profile {self.name}: capacity quantile must lie strictly between 0 and 1, got {cap!r}"
            )

    # ----- the model's inputs --------------------------------------------
    def capacity_description(self) -> str:
        if self.capacity == "sampled":
            return "C drawn from the throughput distribution"
        q = float(self.capacity)
        c = float(self.throughput_kbps.quantile(q)[0])
        return f"C = p{_fmt(100 * q)} of throughput = {c / 1000:.4g} Mbit/s"

    def typical(self) -> tuple[float, float]:
        """(C in bit/s, R in s): the capacity rule's value (median if sampled) and the median RTT."""
        q = 0.5 if self.capacity == "sampled" else float(self.capacity)
        c = float(self.throughput_kbps.quantile(q)[0]) * 1e3
        r = float(self.rtt_ms.quantile(0.5)[0]) / 1e3
        return c, r

    def draw(self, n: int, rng: np.random.Generator, loaded: bool = False) -> Draws:
        """``n`` independent draws of (C, R_O[, R_S]) for the Monte-Carlo.

        C and R are drawn independently, except for paired user samples
        (one row = one measurement), where they are drawn from the same row.
        R_S is drawn independently of both, as the study combined separately
        measured distributions.
        """
        n = int(n)
        if n < 1:
            raise ValueError(f"number of draws must be >= 1, got {n}")
        if loaded and self.loaded_rtt_ms is None:
            raise ProfileError(
                f"profile {self.name} has no loaded-RTT distribution (RTT with a background flow)"
            )
        rows = None
        if self.paired and isinstance(self.throughput_kbps, SampleDistribution):
            rows = rng.integers(0, self.throughput_kbps.values.size, size=n)
        if self.capacity == "sampled":
            thr = _sample(self.throughput_kbps, n, rng, rows)
        else:
            thr = np.full(n, float(self.throughput_kbps.quantile(float(self.capacity))[0]))
        rtt = _sample(self.rtt_ms, n, rng, rows)
        rtt_loaded = (
            self.loaded_rtt_ms.sample(n, rng) / 1e3
            if loaded and self.loaded_rtt_ms is not None
            else None
        )
        return Draws(capacity_bps=thr * 1e3, rtt_s=rtt / 1e3, rtt_loaded_s=rtt_loaded)

    def with_(self, **changes: Any) -> Profile:
        """A copy with some fields replaced (e.g. ``capacity="sampled"``)."""
        from dataclasses import replace

        return replace(self, **changes)

    def summary(self) -> dict[str, str]:
        out = {
            "profile": self.name,
            "throughput_kbps": self.throughput_kbps.describe(),
            "rtt_ms": self.rtt_ms.describe(),
            "capacity": self.capacity_description(),
        }
        if self.loaded_rtt_ms is not None:
            out["loaded_rtt_ms"] = self.loaded_rtt_ms.describe()
        return out


def _sample(
    dist: Distribution, n: int, rng: np.random.Generator, rows: NDArray[np.intp] | None
) -> NDArray[np.float64]:
    if rows is not None and isinstance(dist, SampleDistribution):
        return dist.sample(n, rng, rows=rows)
    return dist.sample(n, rng)


# ----- built-in profiles ---------------------------------------------------


def _data_dir():  # noqa: ANN202 - importlib Traversable
    node = resources.files(DATA_PACKAGE)
    for part in DATA_DIR:
        node = node.joinpath(part)
    return node


def names() -> list[str]:
    """Built-in profile names (the loaded-RTT variants are part of their base profile)."""
    found = []
    for entry in _data_dir().iterdir():
        stem = entry.name.removesuffix(".toml")
        if entry.is_file() and entry.name.endswith(".toml") and not stem.endswith(LOADED_SUFFIX):
            found.append(stem)
    return sorted(found, key=_profile_sort_key)


def _profile_sort_key(name: str) -> tuple[float, str]:
    head = name.rstrip("G").replace("G", "")
    try:
        return (float(head), name)
    except ValueError:
        return (math.inf, name)


def load(name: str) -> Profile:
    """A built-in profile by name (case-insensitive), or a profile TOML file by path."""
    if name.endswith(".toml") and Path(name).is_file():
        path = Path(name)
        base = path.read_text(encoding="utf-8")
        loaded_path = path.with_name(path.stem + LOADED_SUFFIX + ".toml")
        loaded = loaded_path.read_text(encoding="utf-8") if loaded_path.is_file() else None
        return _profile_from_toml(base, str(path), loaded, str(loaded_path))
    available = names()
    match = next((n for n in available if n.lower() == name.lower()), None)
    if match is None:
        raise ProfileError(f"unknown profile {name!r}; built-in profiles: {', '.join(available)}")
    root = _data_dir()
    base = root.joinpath(match + ".toml").read_text(encoding="utf-8")
    loaded_node = root.joinpath(match + LOADED_SUFFIX + ".toml")
    loaded = loaded_node.read_text(encoding="utf-8") if loaded_node.is_file() else None
    return _profile_from_toml(
        base, f"<profile {match}>", loaded, f"<profile {match}{LOADED_SUFFIX}>"
    )


def _profile_from_toml(
    text: str, source: str, loaded_text: str | None, loaded_source: str
) -> Profile:
    data = _parse_toml(text, source)
    name = _get(data, "name", str, source)
    capacity: Any = data.get("capacity", "sampled")
    if isinstance(capacity, Mapping):
        if set(capacity) != {"quantile"}:
            raise ProfileError(f"{source}: capacity: expected 'sampled' or {{ quantile = 0.95 }}")
        capacity = capacity["quantile"]
    bottleneck = data.get("bottleneck", {})
    buffer_bytes = bottleneck.get("buffer_bytes") if isinstance(bottleneck, Mapping) else None
    loaded_dist = None
    loaded_info: dict[str, Any] = {}
    if loaded_text is not None:
        ldata = _parse_toml(loaded_text, loaded_source)
        loaded_dist = _percentile_table(ldata, "loaded_rtt_ms", loaded_source)
        loaded_info = dict(ldata.get("simulation", {}))
    try:
        return Profile(
            name=name,
            description=str(data.get("description", "")),
            source=str(data.get("source", "")),
            throughput_kbps=_percentile_table(data, "throughput_kbps", source),
            rtt_ms=_percentile_table(data, "rtt_ms", source),
            capacity=capacity,
            loaded_rtt_ms=loaded_dist,
            buffer_bytes=int(buffer_bytes) if buffer_bytes is not None else None,
            loaded_info=loaded_info,
        )
    except ProfileError as e:
        raise ProfileError(f"{source}: {e}") from None


def _parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{source}: invalid TOML: {e}") from None


def _get(data: Mapping[str, Any], key: str, kind: type, source: str) -> Any:
    if key not in data:
        raise ProfileError(f"{source}: missing key {key!r}")
    if not isinstance(data[key], kind):
        raise ProfileError(f"{source}: {key}: expected a {kind.__name__}")
    return data[key]


def _percentile_table(data: Mapping[str, Any], key: str, source: str) -> PercentileDistribution:
    table = _get(data, key, dict, source)
    try:
        return PercentileDistribution(tuple(table["percentiles"]), tuple(table["values"]))
    except KeyError as e:
        raise ProfileError(
            f"{source}: {key}: missing {e.args[0]!r} (lists 'percentiles' and 'values')"
        ) from None
    except (TypeError, ProfileError) as e:
        raise ProfileError(f"{source}: {key}: {e}") from None


# ----- user measurements ---------------------------------------------------


def read_samples_csv(
    path: str | os.PathLike[str], columns: Sequence[str] = SAMPLE_COLUMNS
) -> dict[str, NDArray[np.float64]]:
    """Read measurement columns from a CSV file: one row per measurement, every value > 0.

    A first row without any number is a header: it must name every
    column in ``columns`` (in any order; other columns are ignored). Without a
    header, each row holds exactly ``columns``, in that order. Blank lines and
    lines starting with ``#`` are skipped. Raises :class:`ProfileError` with
    the file, line and column of the first problem.
    """
    path = Path(path)
    if path.is_dir():
        raise ProfileError(f"{path} is a directory; expected a CSV file")
    if not path.is_file():
        raise ProfileError(f"no such file: {path}")
    wanted = list(columns)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not a text (UTF-8) CSV file") from None
    rows = [
        (number, row)
        for number, row in enumerate(csv.reader(text.splitlines()), start=1)
        if row and any(cell.strip() for cell in row) and not row[0].lstrip().startswith("#")
    ]
    if not rows:
        raise ProfileError(f"{path}: no measurements (expected columns {', '.join(wanted)})")
    first_line, first = rows[0]
    cells = [c.strip() for c in first]
    if not any(
        _is_number(c) for c in cells
    ):  # a header names columns; a row with a bad value is data
        header = [c.lower() for c in cells]
        missing = [c for c in wanted if c not in header]
        if missing:
            raise ProfileError(
                f"{path}: line {first_line}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                f"(header has {', '.join(cells) or 'nothing'}; expected {', '.join(wanted)})"
            )
        index = {c: header.index(c) for c in wanted}
        width = len(header)
        body = rows[1:]
    else:
        index = {c: i for i, c in enumerate(wanted)}
        width = len(wanted)
        if len(cells) != width:
            raise ProfileError(
                f"{path}: line {first_line}: expected {width} columns ({', '.join(wanted)}) or a header row naming them, "
                f"got {len(cells)}"
            )
        body = rows
    out: dict[str, list[float]] = {c: [] for c in wanted}
    for number, row in body:
        if len(row) != width:
            raise ProfileError(f"{path}: line {number}: expected {width} columns, got {len(row)}")
        for name, i in index.items():
            cell = row[i].strip()
            try:
                value = float(cell)
            except ValueError:
                raise ProfileError(
                    f"{path}: line {number}: {name}: {cell!r} is not a number"
                ) from None
            if not math.isfinite(value):
                raise ProfileError(
                    f"{path}: line {number}: {name}: {cell!r} is not a finite number"
                )
            if value <= 0:
                raise ProfileError(f"{path}: line {number}: {name} must be > 0, got {cell}")
            out[name].append(value)
    n = len(out[wanted[0]])
    if n < 2:
        raise ProfileError(f"{path}: needs at least 2 measurements (rows) to smooth, got {n}")
    return {name: np.asarray(values) for name, values in out.items()}


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def from_samples(
    throughput_kbps: Sequence[float] | NDArray[np.float64],
    rtt_ms: Sequence[float] | NDArray[np.float64],
    name: str = "samples",
    loaded_rtt_ms: Sequence[float] | NDArray[np.float64] | None = None,
    capacity: str | float = "sampled",
) -> Profile:
    """A profile from paired measurements (row i: throughput_kbps[i], rtt_ms[i]), kernel-smoothed."""
    thr, rtt = (
        SampleDistribution(np.asarray(throughput_kbps)),
        SampleDistribution(np.asarray(rtt_ms)),
    )
    if thr.values.size != rtt.values.size:
        raise ProfileError(
            f"throughput and RTT need one value per measurement, got {thr.values.size} and {rtt.values.size}"
        )
    loaded = SampleDistribution(np.asarray(loaded_rtt_ms)) if loaded_rtt_ms is not None else None
    return Profile(
        name=name,
        throughput_kbps=thr,
        rtt_ms=rtt,
        capacity=capacity,
        loaded_rtt_ms=loaded,
        paired=True,
        description=f"{thr.values.size} user measurements",
    )


def from_csv(
    path: str | os.PathLike[str],
    loaded_path: str | os.PathLike[str] | None = None,
    capacity: str | float = "sampled",
) -> Profile:
    """A profile from a measurements CSV (throughput_kbps, rtt_ms) and optionally a loaded-RTT CSV (rtt_ms)."""
    cols = read_samples_csv(path)
    loaded = (
        read_samples_csv(loaded_path, LOADED_COLUMNS)["rtt_ms"] if loaded_path is not None else None
    )
    prof = from_samples(
        cols["throughput_kbps"],
        cols["rtt_ms"],
        name=Path(path).stem,
        loaded_rtt_ms=loaded,
        capacity=capacity,
    )
    return prof.with_(source=str(path))
