"""The scenarios shipped inside the package (``latlab/scenarios/**.toml``).

Names are paths relative to that folder without ``.toml``: ``"default"``,
``"bench/dumbbell-1000"``. Only the standard library is used here, because
the benchmark worker imports this module and must stay lean.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

BENCH_DIR = "bench"


def _root() -> Traversable:
    return resources.files("latlab").joinpath("scenarios")


def exists(name: str) -> bool:
    """True if ``name`` is a built-in scenario."""
    if not name or name.startswith(("/", ".")) or ".." in name.split("/"):
        return False
    return _path(name).is_file()


def _path(name: str) -> Traversable:
    node = _root()
    parts = name.removesuffix(".toml").split("/")
    for part in parts[:-1]:
        node = node.joinpath(part)
    return node.joinpath(parts[-1] + ".toml")


def read_text(name: str) -> str:
    """The TOML text of a built-in scenario; FileNotFoundError listing the choices if unknown."""
    if not exists(name):
        raise FileNotFoundError(f"no built-in scenario {name!r}; built-ins: {', '.join(names())}")
    return _path(name).read_text(encoding="utf-8")


def source_name(name: str) -> str:
    """How error messages refer to a built-in: ``<builtin:bench/dumbbell-10>``."""
    return f"<builtin:{name.removesuffix('.toml')}>"


def names(folder: str = "") -> list[str]:
    """All built-in scenario names (top level and one folder deep), or those in ``folder``."""
    out: list[str] = []
    root = _root()
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.is_file() and entry.name.endswith(".toml") and not folder:
            out.append(entry.name.removesuffix(".toml"))
        elif entry.is_dir() and (not folder or entry.name == folder):
            for sub in sorted(entry.iterdir(), key=lambda e: e.name):
                if sub.is_file() and sub.name.endswith(".toml"):
                    out.append(f"{entry.name}/{sub.name.removesuffix('.toml')}")
    return out


def bench_names() -> list[str]:
    """Benchmark names, without the ``bench/`` prefix: ``["dumbbell-10", ...]``."""
    prefix = BENCH_DIR + "/"
    return [n.removeprefix(prefix) for n in names(BENCH_DIR)]


def description(name: str) -> str:
    """The opening comment paragraph of a built-in scenario file: what it is, in a sentence or two."""
    lines: list[str] = []
    for line in read_text(name).splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        lines.append(stripped.lstrip("#").strip())
    return " ".join(lines).strip()
