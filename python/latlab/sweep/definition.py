"""What a sweep is: a base scenario, parameter cases × a grid × seeds, resolved into runs.

A run is one fully resolved scenario. Its id is the first 16 hex digits of the
SHA-256 of a canonical serialisation of that scenario (JSON, sorted keys), so
the same scenario gets the same id whatever sweep, file or machine produced
it; that is what makes a sweep resumable and its results shareable.

Sweep files are TOML::

    name = "buffer"                  # optional (default: the file's stem)
    base = "dumbbell-small.toml"     # a scenario file (relative to this file),
                                     # a built-in name, or an inline [base] table
    seeds = [1, 2, 3]                # or seeds = 3 (meaning 1, 2, 3)
    timeout_s = 600                  # optional time limit per run

    [grid]                           # every combination of these values
    "topology.core_queue.limit_bytes" = [15000, 60000]
    "flows.0.cc" = ["newreno", "cubic"]

    [[cases]]                        # and/or explicit points, each crossed with the grid
    "topology.core_rate_bps" = 10e6

Keys are dotted paths into the scenario (quote them: ``"flows.0.cc"``); a
value replaces whatever is at its path. The runs are cases × grid × seeds, in
that nesting order.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from latlab.scenario import Scenario, as_scenario

SWEEP_KEYS = ("name", "description", "base", "seeds", "grid", "cases", "timeout_s")
RUN_ID_HEX = 16


class SweepError(ValueError):
    """A sweep definition is invalid: ``"FILE: key: what is wrong"``."""


# ----- run identity ----------------------------------------------------------


def _canonical_default(value: Any) -> Any:
    # TOML dates and times are the only non-JSON values a Scenario can hold.
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def canonical_json(data: Any) -> str:
    """The canonical text of scenario data: JSON with sorted keys and no spaces."""
    return json.dumps(
        data,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=True,
        default=_canonical_default,
    )


def run_id_of(scenario: Scenario) -> str:
    """The id of a run: sha256 of the canonical JSON of the resolved scenario, 16 hex digits."""
    digest = hashlib.sha256(canonical_json(scenario.to_dict()).encode("utf-8")).hexdigest()
    return digest[:RUN_ID_HEX]


def plain_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters as JSON-friendly values (numpy scalars unwrapped, tuples as lists)."""

    def plain(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
        if callable(tolist):
            return plain(tolist())
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if value is None or isinstance(value, (str, bool, int, float)):
            return value
        return _canonical_default(value)

    return {str(k): plain(v) for k, v in params.items()}


@dataclass(frozen=True, eq=False)
class RunSpec:
    """One run of a sweep: the resolved scenario, the parameters that label it, and its id."""

    scenario: Scenario
    params: dict[str, Any] = field(default_factory=dict)
    run_id: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", plain_params(self.params))
        if not self.run_id:
            object.__setattr__(self, "run_id", run_id_of(self.scenario))

    @classmethod
    def of(
        cls,
        scenario: Scenario | str | os.PathLike[str] | Mapping[str, Any],
        params: Mapping[str, Any] | None = None,
    ) -> RunSpec:
        """A run of ``scenario`` (a Scenario, TOML path or dict) labelled with ``params``."""
        return cls(as_scenario(scenario), dict(params or {}))

    def __repr__(self) -> str:
        return f"RunSpec(run_id={self.run_id!r}, params={self.params!r})"


# ----- the sweep -------------------------------------------------------------


def _seed_list(seeds: Any, where: str) -> list[int] | None:
    if seeds is None:
        return None
    if isinstance(seeds, bool):
        raise SweepError(f"{where}: expected a list of integer seeds or a count, got {seeds!r}")
    if isinstance(seeds, int):
        if seeds < 1:
            raise SweepError(f"{where}: a seed count must be at least 1, got {seeds}")
        return list(range(1, seeds + 1))
    if isinstance(seeds, (str, bytes, Mapping)) or not isinstance(seeds, Iterable):
        raise SweepError(f"{where}: expected a list of integer seeds or a count, got {seeds!r}")
    out: list[int] = []
    for s in seeds:
        s = s.item() if hasattr(s, "item") else s
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise SweepError(f"{where}: seeds must be non-negative integers, got {s!r}")
        out.append(int(s))
    if not out:
        raise SweepError(f"{where}: the seed list is empty")
    if len(set(out)) != len(out):
        raise SweepError(f"{where}: a seed appears twice")
    return out


@dataclass
class Sweep:
    """A base scenario and the parameter points to run it at.

    Args:
        base: the scenario every run starts from (a Scenario, a TOML path or a dict).
        grid: dotted key -> list of values; every combination is run.
        cases: a list of {dotted key: value} points, each crossed with the grid.
        seeds: the seeds every point is run with (a list, or a count n meaning 1..n);
            None runs each point once with the scenario's own seed.
        name: a label for progress and the catalog (default: the base scenario's name).
        timeout_s: a time limit per run (None: no limit); ``run_sweep`` may override it.

    ``runs()`` resolves the sweep into :class:`RunSpec` s: cases × grid × seeds.
    """

    base: Scenario | str | os.PathLike[str] | Mapping[str, Any]
    grid: Mapping[str, Sequence[Any]] | None = None
    cases: Sequence[Mapping[str, Any]] | None = None
    seeds: Sequence[int] | int | None = None
    name: str | None = None
    timeout_s: float | None = None
    source: str = "<sweep>"

    def __post_init__(self) -> None:
        self.base = as_scenario(self.base)
        where = self.source
        grid: dict[str, list[Any]] = {}
        for key, values in dict(self.grid or {}).items():
            if isinstance(values, Mapping):
                raise SweepError(
                    f"{where}: grid.{key}: expected a list of values, got a table "
                    f'(write dotted keys quoted: "{key}.name" = [...])'
                )
            if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
                raise SweepError(f"{where}: grid.{key}: expected a list of values, got {values!r}")
            values = list(values)
            if not values:
                raise SweepError(f"{where}: grid.{key}: the list of values is empty")
            grid[str(key)] = values
        self.grid = grid
        cases = []
        for i, case in enumerate(self.cases or []):
            if not isinstance(case, Mapping):
                raise SweepError(
                    f"{where}: cases[{i}]: expected a table of dotted keys, got {case!r}"
                )
            clash = sorted(set(map(str, case)) & set(grid))
            if clash:
                raise SweepError(
                    f"{where}: cases[{i}].{clash[0]}: also a grid key; set it in one place only"
                )
            cases.append({str(k): v for k, v in case.items()})
        self.cases = cases
        self.seeds = _seed_list(self.seeds, f"{where}: seeds")
        if self.seeds is not None and ("seed" in grid or any("seed" in c for c in cases)):
            raise SweepError(f"{where}: seed: set seeds with `seeds`, not in the grid or cases")
        if self.timeout_s is not None and not (
            isinstance(self.timeout_s, (int, float)) and self.timeout_s > 0
        ):
            raise SweepError(
                f"{where}: timeout_s: expected a positive number of seconds, got {self.timeout_s!r}"
            )
        if self.name is None:
            self.name = self.base.name

    # ----- construction -------------------------------------------------
    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Sweep:
        """Read a sweep file (see the module docstring). Raises FileNotFoundError or SweepError."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise SweepError(f"{path}: invalid TOML: {e}") from None
        return cls.from_dict(data, source=str(path), base_dir=path.parent, default_name=path.stem)

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        source: str = "<sweep>",
        base_dir: str | os.PathLike[str] = ".",
        default_name: str | None = None,
    ) -> Sweep:
        """A sweep from the data of a sweep file; a ``base`` path is relative to ``base_dir``."""
        unknown = sorted(set(data) - set(SWEEP_KEYS))
        if unknown:
            raise SweepError(
                f"{source}: {unknown[0]}: unknown key; expected one of {', '.join(SWEEP_KEYS)}"
            )
        if "base" not in data:
            raise SweepError(
                f"{source}: base: missing; give a scenario file, a built-in name or a [base] table"
            )
        grid = data.get("grid")
        if grid is not None and not isinstance(grid, Mapping):
            raise SweepError(f"{source}: grid: expected a table of dotted key = [values]")
        cases = data.get("cases")
        if cases is not None and not isinstance(cases, list):
            raise SweepError(f"{source}: cases: expected an array of tables ([[cases]])")
        name = data.get("name", default_name)
        if name is not None and not isinstance(name, str):
            raise SweepError(f"{source}: name: expected a string")
        return cls(
            base=_load_base(data["base"], source, Path(base_dir)),
            grid=grid,
            cases=cases,
            seeds=data.get("seeds"),
            name=name,
            timeout_s=data.get("timeout_s"),
            source=source,
        )

    # ----- resolution ---------------------------------------------------
    def points(self) -> list[dict[str, Any]]:
        """The parameters of every run, in order: cases × grid × seeds."""
        assert isinstance(self.grid, dict) and isinstance(self.cases, list)
        keys = list(self.grid)
        combos = [dict(zip(keys, values)) for values in itertools.product(*self.grid.values())]
        seeds: list[int | None] = list(self.seeds) if self.seeds is not None else [None]  # type: ignore[arg-type]
        out = []
        for case in self.cases or [{}]:
            for combo in combos:
                for seed in seeds:
                    point = {**case, **combo}
                    if seed is not None:
                        point["seed"] = seed
                    out.append(point)
        return out

    def runs(self) -> list[RunSpec]:
        """Every run as a :class:`RunSpec` (resolved scenario, its parameters, its id)."""
        assert isinstance(self.base, Scenario)
        specs = []
        for point in self.points():
            try:
                scenario = self.base.with_(point)
            except (KeyError, TypeError) as e:
                message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
                raise SweepError(
                    f"{self.source}: {message} (setting {plain_params(point)})"
                ) from None
            specs.append(RunSpec(scenario, point))
        check_unique(specs, self.source)
        return specs

    def __len__(self) -> int:
        assert isinstance(self.grid, dict) and isinstance(self.cases, list)
        n = math.prod(len(v) for v in self.grid.values())
        return n * max(len(self.cases), 1) * (len(self.seeds) if self.seeds is not None else 1)  # type: ignore[arg-type]


def _load_base(base: Any, source: str, base_dir: Path) -> Scenario:
    if isinstance(base, Mapping):
        return Scenario.from_dict(base, source=f"{source} [base]")
    if not isinstance(base, str):
        raise SweepError(
            f"{source}: base: expected a scenario file name, a built-in name or a table"
        )
    path = Path(base) if Path(base).is_absolute() else base_dir / base
    if path.is_file():
        return Scenario.from_toml(path)
    from latlab import builtin

    if builtin.exists(base):
        return Scenario.builtin(base)
    raise SweepError(f"{source}: base: no such scenario file: {path}")


def check_unique(specs: Sequence[RunSpec], source: str = "<sweep>") -> None:
    """Raise SweepError if two runs resolve to the same scenario (one of them would be lost)."""
    seen: dict[str, RunSpec] = {}
    for spec in specs:
        first = seen.setdefault(spec.run_id, spec)
        if first is not spec:
            raise SweepError(
                f"{source}: the runs {first.params} and {spec.params} are the same scenario "
                f"(run {spec.run_id}); does a parameter not change the scenario?"
            )


def as_runs(obj: Any) -> list[RunSpec]:
    """Runs from what callers naturally hold.

    Accepts a :class:`Sweep`, or an iterable of :class:`RunSpec`, of
    ``(params, scenario)`` pairs (a scenario being a Scenario, a TOML path or
    a dict), or of bare scenarios (no parameters).
    """
    if isinstance(obj, Sweep):
        return obj.runs()
    if isinstance(obj, (Scenario, str, os.PathLike, Mapping)) or not isinstance(obj, Iterable):
        raise TypeError(f"expected a Sweep or a list of runs, not a {type(obj).__name__}")
    specs: list[RunSpec] = []
    for i, item in enumerate(obj):
        if isinstance(item, RunSpec):
            specs.append(item)
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Mapping):
            specs.append(RunSpec.of(item[1], item[0]))
        elif isinstance(item, (Scenario, str, os.PathLike, Mapping)):
            specs.append(RunSpec.of(item))
        else:
            raise TypeError(
                f"run {i}: expected a RunSpec, a (params, scenario) pair or a scenario, "
                f"not a {type(item).__name__}"
            )
    check_unique(specs)
    return specs
