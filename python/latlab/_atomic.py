"""Write files so a crash never leaves a half-written one behind.

Each file is written to a hidden temporary name in the same directory and then
renamed over the target with ``os.replace``, which is atomic on POSIX: readers
see either the old complete file or the new complete file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

# mkstemp creates files readable by the owner only; results should get the
# permissions any other new file would, so apply the process umask instead.
_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; rename it to ``target`` on success, remove it on failure."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_with(target: Path, writer: Callable[[Path], object]) -> Path:
    """Call ``writer(tmp_path)`` and atomically move the result to ``target``."""
    with atomic_path(target) as tmp:
        writer(tmp)
    return Path(target)


def write_text(target: Path, text: str) -> Path:
    return write_with(target, lambda p: p.write_text(text, encoding="utf-8"))
