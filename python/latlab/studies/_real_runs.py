"""What the studies' real runs (``latlab reproduce NAME --real``) do the same way.

Each study's ``real.py`` builds its own testbed, cases and settings; these
are the steps they share: say what the machine lacks, find ``latlab-net``,
append each row to ``real.jsonl`` as it is measured (an interrupted run loses
nothing already run), run a case once more when other jobs' sockets pushed
the machine into TCP memory pressure, and read the rows back and pick among
them.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from latlab.real.hostload import tcp_mem_pages, tcp_mem_pressure_pages

#: How long a case waits for TCP memory pressure to pass before it runs again.
PRESSURE_WAIT_S = 120.0


def testbed_unavailable_reason(runs: str, root_for: str, tools: Sequence[str]) -> str | None:
    """What every namespace testbed needs and this machine lacks (root, iproute2's ``tools``, CUBIC), or None.

    ``runs`` names the runs in the message ("the real runs"), ``root_for`` what root is needed for.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return f"{runs} need root ({root_for})"
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        return f"{runs} need iproute2 ({', '.join(missing)} missing)"
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    if avail.exists() and "cubic" not in avail.read_text().split():
        return "the kernel offers no cubic congestion control"
    return None


def find_exe() -> str:
    """The ``latlab-net`` binary (see :mod:`latlab.real.netbin`)."""
    from latlab.real.netbin import find_binary

    return str(find_binary())


def append_row(jsonl: Path, row: Mapping[str, Any]) -> None:
    """One measured row onto ``jsonl``, at once, so a later failure loses nothing already run."""
    with jsonl.open("a") as f:
        f.write(json.dumps(row) + "\n")


def load_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a ``real.jsonl`` (one JSON object a line; blank lines skipped)."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def wait_for_tcp_memory(timeout_s: float = PRESSURE_WAIT_S) -> None:
    """Wait until the machine's TCP memory is below 80 % of its pressure threshold, or ``timeout_s``."""
    limit = tcp_mem_pressure_pages()
    deadline = time.monotonic() + timeout_s
    while (
        limit is not None and time.monotonic() < deadline and (tcp_mem_pages() or 0) > 0.8 * limit
    ):
        time.sleep(1.0)


def measure_case(
    run: Callable[[Path], list[dict[str, Any]]], work: Path, wait_s: float = PRESSURE_WAIT_S
) -> list[dict[str, Any]]:
    """``run(work)``'s rows; if a row ran under TCP memory pressure (other jobs' sockets count against one
    machine-wide budget, and Linux then shrinks every receive window), wait for it to pass and run once more
    in a fresh ``work``."""
    measured = run(work)
    if any(r["tcp_mem_pressure"] for r in measured):
        wait_for_tcp_memory(wait_s)
        shutil.rmtree(work)
        work.mkdir()
        measured = run(work)
    return measured


def rows_where(rows: Iterable[dict[str, Any]], where: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows whose fields equal every value of ``where``."""
    return [r for r in rows if all(r.get(k) == v for k, v in where.items())]


def first_row(rows: Iterable[dict[str, Any]], where: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first row whose fields equal every value of ``where``, or None."""
    found = rows_where(rows, where)
    return found[0] if found else None
