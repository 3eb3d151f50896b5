"""Access to the compiled core, imported on first use.

Going through :func:`core` (instead of a module-level import) lets the pure
Python parts work without the extension and lets tests substitute a fake
module via ``sys.modules["latlab._core"]``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from latlab.errors import CoreNotBuiltError

BUILD_HINT = "build it with `maturin develop --release -m crates/py/Cargo.toml` (or `make develop`)"


def core() -> ModuleType:
    """Return ``latlab._core`` or raise :class:`CoreNotBuiltError` with a build hint."""
    try:
        return importlib.import_module("latlab._core")
    except ImportError as e:
        raise CoreNotBuiltError(
            f"latlab's compiled core (latlab._core) is not available: {e}; {BUILD_HINT}"
        ) from e


def core_version() -> str | None:
    """The core's version string, or None when it is not built."""
    try:
        return str(core().version())
    except CoreNotBuiltError:
        return None
