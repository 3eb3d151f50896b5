"""The scheme file of ``latlab compare``: parsed once into :class:`CompareSpec`.

A scheme file is TOML::

    name = "compare-lte"          # optional (default: the file's stem)
    seeds = 3                     # a count n (seeds 1..n) or a list of seeds
    flows = 1                     # flows of the scheme in its run alone
    duration_s = 30               # optional: default the path scenario's
    measure_from_s = 10           # optional: default the path scenario's

    [path]
    scenario = "cellular.toml"    # relative to this file; or inline keys:
                                  # topology = {...}, tcp = {...}, sample_interval_ms
    src = "server"                # optional: default per topology kind
    dst = "ue0"
    bottleneck = "topology.queue" # optional: the dotted path of the queue a scheme sets
    edge = "topology.edge_queue"  # optional: where a scheme's edge_queue goes (a dotted
                                  # path or a list of them; default per topology kind)

    [[schemes]]
    name = "cubic+codel"
    cc = "cubic"                  # any controller the simulator has
    cc_params = {}                # optional: the controller's constants
    rwnd = "fixed"                # fixed (default), autotuning, drwa or rtac
    rwnd_params = {}              # optional: the receiver controller's constants
    queue = "codel"               # a kind, or a table { kind = "fq_codel", target_ms = 5 };
                                  # default: the path's own queue
    pacing = true                 # optional: host pacing on/off (default: the path's)
    ecn = false                   # ECN at the ends and in the queue (default false)
    edge_queue = { kind = "edge-pacer", delay_ms = 10 }
                                  # optional: the queue at the path's edge (path.edge),
                                  # e.g. the edge pacer; default: the path's

Only the shape is checked here (keys, types, counts); whether a controller, a
receiver controller or a queue kind exists, and whether its constants are
valid, is the simulator's to say: :func:`latlab.compare.translate.check`
validates every scheme's scenario with the core and reports its errors
against the scheme's own keys.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOP_KEYS = (
    "name",
    "description",
    "seeds",
    "flows",
    "duration_s",
    "measure_from_s",
    "path",
    "schemes",
)
PATH_KEYS = (
    "scenario",
    "topology",
    "tcp",
    "sample_interval_ms",
    "src",
    "dst",
    "bottleneck",
    "edge",
)
SCHEME_KEYS = (
    "name",
    "cc",
    "cc_params",
    "rwnd",
    "rwnd_params",
    "queue",
    "pacing",
    "ecn",
    "edge_queue",
)
DEFAULT_RWND = "fixed"


class CompareError(ValueError):
    """A scheme file is invalid: ``"FILE: key: what is wrong and what is expected"``."""


@dataclass(frozen=True)
class Scheme:
    """One countermeasure: a congestion controller, a receiver window control, a
    bottleneck queue, host pacing and ECN."""

    name: str
    cc: str
    cc_params: dict[str, float] = field(default_factory=dict)
    rwnd: str = DEFAULT_RWND
    rwnd_params: dict[str, float] = field(default_factory=dict)
    #: The bottleneck queue table (with ``kind``); None keeps the path's queue.
    queue: dict[str, Any] | None = None
    #: Host pacing; None keeps the path's TCP setting.
    pacing: bool | None = None
    ecn: bool = False
    #: The queue table put at the path's edge (:attr:`PathSpec.edge`), e.g. the edge
    #: pacer; None keeps the path's.
    edge_queue: dict[str, Any] | None = None

    @property
    def queue_kind(self) -> str | None:
        return None if self.queue is None else str(self.queue["kind"])

    @property
    def edge_kind(self) -> str | None:
        return None if self.edge_queue is None else str(self.edge_queue["kind"])


@dataclass(frozen=True)
class PathSpec:
    """The network every scheme runs on: scenario data without flows, and where flows go."""

    #: The scenario's data (topology, tcp, ...); its flows are replaced by each run's.
    scenario: dict[str, Any]
    #: Names the scenario in error messages, and its folder resolves relative trace paths.
    source: str
    src: str
    dst: str
    #: Dotted path of the bottleneck queue a scheme's ``queue`` replaces.
    bottleneck: str
    #: Dotted paths of the edge queues a scheme's ``edge_queue`` replaces (none: the
    #: path has no edge a scheme may set).
    edge: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompareSpec:
    """A parsed scheme file."""

    name: str
    source: str
    seeds: tuple[int, ...]
    flows: int
    duration_s: float
    measure_from_s: float
    path: PathSpec
    schemes: tuple[Scheme, ...]
    description: str = ""


# Where flows go, and which queue is the bottleneck, per topology kind.
# {i} counts a group's flows; the competitor takes the next index.
PATH_DEFAULTS: dict[str, tuple[str, str, str]] = {
    "cellular": ("server", "ue0", "topology.queue"),
    "wifi": ("server", "sta0", "topology.ap.queue"),
    "dumbbell": ("s{i}", "d{i}", "topology.core_queue"),
    "edge-dumbbell": ("s{i}", "d{i}", "topology.core_queue"),
}
#: Where a scheme's ``edge_queue`` goes, per topology kind, when the path does not say.
EDGE_DEFAULTS: dict[str, tuple[str, ...]] = {"edge-dumbbell": ("topology.edge_queue",)}


def load(path: str | Path) -> CompareSpec:
    """Read a scheme file. Raises FileNotFoundError, or CompareError naming the key."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CompareError(f"{path}: invalid TOML: {e}") from None
    return from_dict(data, source=str(path), base_dir=path.parent, default_name=path.stem)


def from_dict(
    data: Mapping[str, Any],
    source: str = "<compare>",
    base_dir: str | Path = ".",
    default_name: str = "compare",
) -> CompareSpec:
    """A CompareSpec from a scheme file's data; ``path.scenario`` is relative to ``base_dir``."""
    _known(data, TOP_KEYS, source, "")
    path = _path(_required(data, "path", source), source, Path(base_dir))
    duration_s = _number(data, "duration_s", source, path.scenario.get("duration_s"))
    if duration_s is None or duration_s <= 0:
        raise CompareError(
            f"{source}: duration_s: expected a positive number of seconds "
            "(here or in the path's scenario)"
        )
    measure_from_s = _number(data, "measure_from_s", source, path.scenario.get("measure_from_s", 0))
    if not 0 <= measure_from_s < duration_s:
        raise CompareError(
            f"{source}: measure_from_s: expected a start of the measurement window in "
            f"[0, duration_s = {duration_s:g}) seconds, got {measure_from_s:g}"
        )
    flows = data.get("flows", 1)
    if isinstance(flows, bool) or not isinstance(flows, int) or flows < 1:
        raise CompareError(
            f"{source}: flows: expected a number of flows of at least 1, got {flows!r}"
        )
    schemes_data = _required(data, "schemes", source)
    if not isinstance(schemes_data, list) or not schemes_data:
        raise CompareError(f"{source}: schemes: expected one or more [[schemes]] tables")
    schemes = tuple(_scheme(s, i, source) for i, s in enumerate(schemes_data))
    for i, scheme in enumerate(schemes):
        if scheme.edge_queue is not None and not path.edge:
            raise CompareError(
                f"{source}: schemes[{i}].edge_queue: the path has no edge queue to set; name "
                'it with path.edge (e.g. edge = "topology.edge_queue" on an edge-dumbbell, '
                'or "topology.links.2.queue" on a custom topology)'
            )
    names = [s.name for s in schemes]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CompareError(
            f"{source}: schemes: the name {twice[0]!r} is used twice; names must differ"
        )
    return CompareSpec(
        name=_string(data, "name", source, default_name),
        description=_string(data, "description", source, ""),
        source=source,
        seeds=seed_list(data.get("seeds", 3), f"{source}: seeds"),
        flows=flows,
        duration_s=float(duration_s),
        measure_from_s=float(measure_from_s),
        path=path,
        schemes=schemes,
    )


def seed_list(seeds: Any, where: str) -> tuple[int, ...]:
    """Seeds from a count n (1..n) or a list of distinct non-negative integers."""
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if seeds < 1:
            raise CompareError(f"{where}: expected a seed count of at least 1, got {seeds}")
        return tuple(range(1, seeds + 1))
    if not isinstance(seeds, list) or not seeds:
        raise CompareError(f"{where}: expected a count or a non-empty list of seeds, got {seeds!r}")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise CompareError(f"{where}: seeds must be non-negative integers, got {s!r}")
    if len(set(seeds)) != len(seeds):
        raise CompareError(f"{where}: a seed appears twice")
    return tuple(seeds)


# ----- pieces ------------------------------------------------------------------


def _known(data: Any, keys: tuple[str, ...], source: str, where: str) -> None:
    if not isinstance(data, Mapping):
        raise CompareError(f"{source}: {where.rstrip('.') or 'file'}: expected a table")
    unknown = [k for k in data if k not in keys]
    if unknown:
        raise CompareError(
            f"{source}: {where}{unknown[0]}: unknown key; expected one of {', '.join(keys)}"
        )


def _required(data: Mapping[str, Any], key: str, source: str, where: str = "") -> Any:
    if key not in data:
        raise CompareError(f"{source}: {where}{key}: missing")
    return data[key]


def _number(data: Mapping[str, Any], key: str, source: str, default: Any) -> Any:
    value = data.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CompareError(f"{source}: {key}: expected a number of seconds, got {value!r}")
    return float(value)


def _string(data: Mapping[str, Any], key: str, source: str, default: str, where: str = "") -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or (key in data and not value):
        raise CompareError(f"{source}: {where}{key}: expected a non-empty string, got {value!r}")
    return value


def _params(data: Mapping[str, Any], key: str, source: str, where: str) -> dict[str, float]:
    value = data.get(key, {})
    bad = not isinstance(value, Mapping) or any(
        isinstance(v, bool) or not isinstance(v, (int, float)) for v in value.values()
    )
    if bad:
        raise CompareError(
            f"{source}: {where}{key}: expected a table of numbers such as "
            f"{{ target_ms = 50 }}, got {value!r}"
        )
    return {str(k): float(v) for k, v in value.items()}


def _flag(data: Mapping[str, Any], key: str, source: str, where: str) -> bool | None:
    value = data.get(key)
    if value is not None and not isinstance(value, bool):
        raise CompareError(f"{source}: {where}{key}: expected true or false, got {value!r}")
    return value


def _queue(value: Any, source: str, where: str, key: str = "queue") -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str) and value:
        return {"kind": value}
    if isinstance(value, Mapping) and isinstance(value.get("kind"), str):
        return dict(value)
    raise CompareError(
        f'{source}: {where}{key}: expected a queue kind such as "codel" or a table with a '
        f'kind, such as {{ kind = "fq_codel", target_ms = 5 }}, got {value!r}'
    )


def _edge(data: Mapping[str, Any], kind: Any, source: str) -> tuple[str, ...]:
    """path.edge: one dotted path or a list of them (default per topology kind)."""
    value = data.get("edge", EDGE_DEFAULTS.get(str(kind), ()))
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise CompareError(
            f"{source}: path.edge: expected a dotted path to a queue, or a list of them, "
            f'such as "topology.edge_queue", got {value!r}'
        )
    return tuple(value)


def _scheme(data: Any, i: int, source: str) -> Scheme:
    where = f"schemes[{i}]."
    _known(data, SCHEME_KEYS, source, where)
    name = _string(data, "name", source, "", where)
    if not name:
        raise CompareError(f"{source}: {where}name: missing; every scheme needs a name")
    return Scheme(
        name=name,
        cc=_string(data, "cc", source, _required(data, "cc", source, where), where),
        cc_params=_params(data, "cc_params", source, where),
        rwnd=_string(data, "rwnd", source, DEFAULT_RWND, where),
        rwnd_params=_params(data, "rwnd_params", source, where),
        queue=_queue(data.get("queue"), source, where),
        pacing=_flag(data, "pacing", source, where),
        ecn=bool(_flag(data, "ecn", source, where)),
        edge_queue=_queue(data.get("edge_queue"), source, where, "edge_queue"),
    )


def _path(data: Any, source: str, base_dir: Path) -> PathSpec:
    if isinstance(data, str):
        data = {"scenario": data}
    _known(data, PATH_KEYS, source, "path.")
    scenario_source = source
    if "scenario" in data:
        inline = [k for k in ("topology", "tcp", "sample_interval_ms") if k in data]
        if inline:
            raise CompareError(
                f"{source}: path.{inline[0]}: give either path.scenario (a file) or inline "
                "keys (topology, tcp, sample_interval_ms), not both"
            )
        file = Path(_string(data, "scenario", source, "", "path."))
        file = file if file.is_absolute() else base_dir / file
        if not file.is_file():
            raise CompareError(f"{source}: path.scenario: no such scenario file: {file}")
        try:
            scenario = tomllib.loads(file.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise CompareError(f"{file}: invalid TOML: {e}") from None
        scenario_source = str(file)
    else:
        scenario = {k: data[k] for k in ("topology", "tcp", "sample_interval_ms") if k in data}
        if "topology" not in scenario:
            raise CompareError(
                f'{source}: path: expected scenario = "FILE" or an inline topology table'
            )
    kind = (
        scenario.get("topology", {}).get("kind")
        if isinstance(scenario.get("topology"), Mapping)
        else None
    )
    src, dst, bottleneck = PATH_DEFAULTS.get(str(kind), (None, None, None))
    for key, default in (("src", src), ("dst", dst), ("bottleneck", bottleneck)):
        if key not in data and default is None:
            raise CompareError(
                f"{source}: path.{key}: missing; a {kind!r} topology has no default, so name it "
                '(e.g. src = "server", dst = "client", bottleneck = "topology.links.0.queue")'
            )
    return PathSpec(
        scenario=dict(scenario),
        source=scenario_source,
        src=_string(data, "src", source, src or "", "path."),
        dst=_string(data, "dst", source, dst or "", "path."),
        bottleneck=_string(data, "bottleneck", source, bottleneck or "", "path."),
        edge=_edge(data, kind, source),
    )
