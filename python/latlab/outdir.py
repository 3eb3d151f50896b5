"""Where a run or sweep writes when the user names no folder: ``out/<name>``."""

from __future__ import annotations

import re
from pathlib import Path

DEFAULT_OUT_ROOT = Path("out")


def default_outdir(name: str) -> Path:
    """out/<scenario name>, with characters unsafe in a folder name replaced."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "scenario"
    return DEFAULT_OUT_ROOT / safe
