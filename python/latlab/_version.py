"""The package version, from the installed metadata (maturin sets it from Cargo)."""

from __future__ import annotations

from importlib import metadata

try:
    __version__: str = metadata.version("latlab")
except metadata.PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0+unknown"
