"""`Scenario`: a TOML scenario as editable Python data that remembers where it came from.

The schema itself lives in Rust (``crates/scenario/src/scenario.rs``); this class
does not duplicate it. It only parses TOML, edits values by dotted path (the
building block of sweeps), serialises back to TOML, and asks the core to
validate. Keeping the source name (the file path) means every error the core
reports points at the file the user wrote.
"""

from __future__ import annotations

import copy
import os
import tomllib
from collections.abc import Mapping
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

import tomli_w

from latlab import _native, dotpath
from latlab.errors import ScenarioError

# serde defaults of scenario.rs, for the convenience properties below.
DEFAULT_NAME = "scenario"
DEFAULT_SEED = 1

_SCALARS = (str, bool, int, float, date, datetime, time)


def _to_toml_value(value: Any, where: str) -> Any:
    """Convert ``value`` to plain TOML-able Python data (numpy scalars, tuples, paths included).

    Sweeps often produce numpy numbers; ``numpy.int64`` is not an ``int`` and
    TOML writers reject it, so it is unwrapped here, at the point of the edit,
    where the error (if any) can name the key.
    """
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {
            str(k): _to_toml_value(v, f"{where}.{k}") for k, v in value.items() if v is not None
        }
    if isinstance(value, (list, tuple)):
        return [_to_toml_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
    if callable(tolist):
        return _to_toml_value(tolist(), where)
    raise TypeError(f"{where}: cannot store a {type(value).__name__} in a TOML scenario")


class Scenario:
    """A simulation scenario: nested dicts and lists mirroring the TOML file.

    Create one with :meth:`from_toml`, :meth:`from_toml_str`, :meth:`from_dict`
    (or ``Scenario(dict)``) or :meth:`builtin`. Edit with :meth:`set` (in
    place) or :meth:`with_` (a copy), both taking dotted paths such as
    ``"flows.0.cc"`` or ``"topology.core_queue.limit_bytes"``.

    An unedited scenario keeps its original text, so :meth:`to_toml` returns
    the file as written (comments included) and core errors quote correct line
    numbers. After an edit the text is regenerated, and errors name the source
    as ``"FILE (modified)"``.
    """

    __slots__ = ("_data", "_source", "_text", "_from_text")

    def __init__(self, data: Mapping[str, Any] | None = None, source: str = "<dict>") -> None:
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise TypeError(
                f"a Scenario is built from a mapping (a TOML table), not a {type(data).__name__}"
            )
        self._data: dict[str, Any] = _to_toml_value(data, "scenario")
        self._source = str(source)
        self._text: str | None = None
        self._from_text = False

    # ----- construction -------------------------------------------------
    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Scenario:
        """Read a scenario file. Raises FileNotFoundError, or ScenarioError for invalid TOML."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        return cls.from_toml_str(text, source=str(path))

    @classmethod
    def from_toml_str(cls, text: str, source: str = "<string>") -> Scenario:
        """Parse scenario TOML text; ``source`` names it in error messages."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(f"{source}: invalid TOML: {e}") from None
        sc = cls(data, source=source)
        sc._text = text
        sc._from_text = True
        return sc

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<dict>") -> Scenario:
        """Build from a (deep-copied) mapping of plain Python data."""
        return cls(data, source=source)

    @classmethod
    def builtin(cls, name: str) -> Scenario:
        """A scenario shipped with latlab: ``"default"`` or ``"bench/dumbbell-1000"``."""
        from latlab import builtin

        return cls.from_toml_str(builtin.read_text(name), source=builtin.source_name(name))

    # ----- identity -----------------------------------------------------
    @property
    def source(self) -> str:
        """Where the scenario came from (a file path, ``<string>`` or ``<dict>``)."""
        return self._source

    @property
    def modified(self) -> bool:
        """True when the data no longer matches the original text (or there never was one)."""
        return self._text is None

    @property
    def core_source(self) -> str:
        """The source name handed to the core, marking regenerated text as such."""
        if self._text is None and self._from_text:
            return f"{self._source} (modified)"
        return self._source

    @property
    def name(self) -> str:
        return str(self._data.get("name", DEFAULT_NAME))

    @property
    def seed(self) -> int:
        return int(self._data.get("seed", DEFAULT_SEED))

    @property
    def duration_s(self) -> float | None:
        """Simulated duration in seconds (None if the scenario lacks it; validation will say so)."""
        value = self._data.get("duration_s")
        return (
            float(value)
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else None
        )

    # ----- conversion ---------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A deep copy of the data; editing it does not change the scenario."""
        return copy.deepcopy(self._data)

    def to_toml(self) -> str:
        """TOML text: the original text if unedited, else freshly written (tomli-w)."""
        if self._text is not None:
            return self._text
        return tomli_w.dumps(self._data)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_toml` to ``path`` atomically (temp file + rename)."""
        from latlab._atomic import write_text

        return write_text(Path(path), self.to_toml())

    # ----- editing ------------------------------------------------------
    def get(self, path: str, default: Any = dotpath._MISSING) -> Any:
        """The value at a dotted path, e.g. ``get("flows.0.cc")``; KeyError (or ``default``) if absent.

        Returns a copy for tables and lists, so editing it cannot bypass :meth:`set`.
        """
        return copy.deepcopy(dotpath.get(self._data, path, default))

    def set(self, path: str, value: Any) -> Scenario:
        """Set a dotted path in place and return ``self`` (for chaining).

        Missing tables on the way are created. ``None`` removes the key, which
        is how an optional setting goes back to its default (e.g.
        ``set("flows.0.size_bytes", None)`` makes a flow long-lived).
        """
        if value is None:
            dotpath.delete(self._data, path)
        else:
            dotpath.set_value(self._data, path, _to_toml_value(value, path))
        self._text = None
        return self

    def delete(self, path: str) -> Scenario:
        """Remove a key (or list item) if present; return ``self``."""
        dotpath.delete(self._data, path)
        self._text = None
        return self

    def with_(self, changes: Mapping[str, Any] | None = None, /, **kw: Any) -> Scenario:
        """A copy with changes applied; the original is untouched.

        Keys are dotted paths. Keyword names cannot contain dots, so ``__``
        stands for ``.`` there::

            sc.with_(seed=2, duration_s=10)
            sc.with_({"flows.0.cc": "cubic"})
            sc.with_(topology__core_rate_bps=50e6)
        """
        new = self.copy()
        items = dict(changes or {})
        items.update({k.replace("__", "."): v for k, v in kw.items()})
        for path, value in items.items():
            new.set(path, value)
        return new

    replace = with_

    def copy(self) -> Scenario:
        """An independent copy (same source, same original text if unedited)."""
        new = Scenario.__new__(Scenario)
        new._data = copy.deepcopy(self._data)
        new._source = self._source
        new._text = self._text
        new._from_text = self._from_text
        return new

    # ----- checking -----------------------------------------------------
    def validate(self) -> Scenario:
        """Ask the core to parse and check the scenario; raise ScenarioError if it is invalid.

        Returns ``self``. Needs the compiled core (CoreNotBuiltError otherwise).
        """
        _native.core().validate(self.to_toml(), self.core_source)
        return self

    # ----- dunder -------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Scenario):
            return NotImplemented
        return self._data == other._data

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        edited = ", modified" if self._text is None and self._from_text else ""
        return f"Scenario(name={self.name!r}, source={self._source!r}{edited})"

    def __getitem__(self, path: str) -> Any:
        return self.get(path)

    def __setitem__(self, path: str, value: Any) -> None:
        self.set(path, value)


def as_scenario(obj: Scenario | str | os.PathLike[str] | Mapping[str, Any]) -> Scenario:
    """Accept what users naturally pass: a Scenario, a TOML path, or a dict."""
    if isinstance(obj, Scenario):
        return obj
    if isinstance(obj, Mapping):
        return Scenario.from_dict(obj)
    if isinstance(obj, (str, os.PathLike)):
        return Scenario.from_toml(obj)
    raise TypeError(
        f"expected a Scenario, a path to a TOML file or a dict, not a {type(obj).__name__}"
    )
