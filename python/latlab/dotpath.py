"""Dotted key paths into nested TOML data: ``"flows.0.cc"``, ``"topology.links[2].rate_bps"``.

Both spellings of a list index are accepted, so a path copied from a
ScenarioError message (``topology.links[2].rate_bps``) works as-is, and so do
the short forms sweeps like to generate (``flows.0.cc``). Negative indices
count from the end, as in Python.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping, MutableSequence
from typing import Any

Key = str | int

_TOKEN = re.compile(r"\[(-?\d+)\]|([^.\[\]]+)")
_INT = re.compile(r"-?\d+")
_MISSING = object()


def parse(path: str) -> list[Key]:
    """Split a dotted path into keys; bracketed indices become ints, other parts stay strings."""
    if not isinstance(path, str) or not path:
        raise KeyError(f"empty key path {path!r}")
    keys: list[Key] = []
    pos = 0
    expect_key = True
    while pos < len(path):
        if path[pos] == "." and not expect_key:
            pos += 1
            expect_key = True
            continue
        m = _TOKEN.match(path, pos)
        if m is None or (m.group(2) is not None and not expect_key):
            raise KeyError(f"malformed key path {path!r} at character {pos + 1}")
        keys.append(int(m.group(1)) if m.group(1) is not None else m.group(2))
        pos = m.end()
        expect_key = False
    if expect_key:
        raise KeyError(f"malformed key path {path!r}: ends with '.'")
    return keys


def format_path(keys: list[Key]) -> str:
    """The canonical spelling of a path, e.g. ``topology.links[2].rate_bps``."""
    out = ""
    for k in keys:
        out += f"[{k}]" if _is_index(k) and out else (f".{k}" if out else str(k))
    return out


def _is_index(key: Key) -> bool:
    return isinstance(key, int) or bool(_INT.fullmatch(key))


def _step(node: Any, key: Key, keys: list[Key], i: int) -> Any:
    """Index one level down, with an error that names the path walked so far."""
    where = format_path(keys[: i + 1])
    if isinstance(node, MutableSequence):
        if not _is_index(key):
            raise KeyError(
                f"{where}: {format_path(keys[:i]) or 'value'} is a list; expected an integer index"
            )
        idx = int(key)
        if not -len(node) <= idx < len(node):
            raise KeyError(f"{where}: index out of range (the list has {len(node)} items)")
        return node[idx]
    if isinstance(node, MutableMapping):
        if str(key) not in node:
            raise KeyError(f"{where}: no such key")
        return node[str(key)]
    raise KeyError(
        f"{where}: {format_path(keys[:i])} is a {type(node).__name__}, not a table or list"
    )


def get(data: Any, path: str, default: Any = _MISSING) -> Any:
    """The value at ``path``; ``default`` (if given) when any part is missing."""
    keys = parse(path)
    node = data
    try:
        for i, key in enumerate(keys):
            node = _step(node, key, keys, i)
    except KeyError:
        if default is _MISSING:
            raise
        return default
    return node


def _parent(data: Any, keys: list[Key], create: bool) -> Any:
    """The container holding the last key, creating missing tables on the way if asked."""
    node = data
    for i, key in enumerate(keys[:-1]):
        if (
            create
            and isinstance(node, MutableMapping)
            and str(key) not in node
            and not _is_index(keys[i + 1])
        ):
            node[str(key)] = {}
        node = _step(node, key, keys, i)
    return node


def set_value(data: Any, path: str, value: Any) -> None:
    """Set ``path`` to ``value`` in place, creating missing intermediate tables.

    Lists are never grown: setting ``flows[3]`` needs at least four flow groups.
    """
    keys = parse(path)
    parent = _parent(data, keys, create=True)
    last = keys[-1]
    if isinstance(parent, MutableSequence):
        _step(parent, last, keys, len(keys) - 1)  # bounds and type check
        parent[int(last)] = value
    elif isinstance(parent, MutableMapping):
        parent[str(last)] = value
    else:
        raise KeyError(
            f"{format_path(keys)}: {format_path(keys[:-1])} is a {type(parent).__name__}, not a table or list"
        )


def delete(data: Any, path: str, missing_ok: bool = True) -> None:
    """Remove the key (or list item) at ``path``; silently if it is absent and ``missing_ok``."""
    keys = parse(path)
    try:
        parent = _parent(data, keys, create=False)
        _step(parent, keys[-1], keys, len(keys) - 1)
    except KeyError:
        if missing_ok:
            return
        raise
    if isinstance(parent, MutableSequence):
        del parent[int(keys[-1])]
    else:
        del parent[str(keys[-1])]
