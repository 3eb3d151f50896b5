"""Reproductions of published studies, one module each.

A study module defines:

* ``NAME``: the name ``latlab reproduce NAME`` takes;
* ``DESCRIPTION``: one line for ``latlab reproduce --list``;
* ``reproduce(outdir: Path, quick: bool = False, jobs: int | None = None) -> Path``:
  builds scenarios, runs them, writes Parquet data, PNG figures and a
  Markdown report into ``outdir`` and returns the report's path.

Studies are discovered by scanning this package, so adding one needs no
edit elsewhere.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def available() -> dict[str, ModuleType]:
    """All study modules, by their ``NAME``."""
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        name = getattr(module, "NAME", None)
        if isinstance(name, str) and callable(getattr(module, "reproduce", None)):
            found[name] = module
    return dict(sorted(found.items()))
