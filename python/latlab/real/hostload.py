"""What else on this machine can disturb a real-network run, measured while it lasts.

Real runs (emulated paths, real Linux TCP) share the machine with whatever
else runs on it. Two things spoil them without any error:

- **TCP memory pressure.** Every TCP socket in every namespace counts
  against one machine-wide budget (net.ipv4.tcp_mem, in pages). Above its
  second value Linux shrinks each receive window to four segments, so a
  receiver under test advertises a few KB whatever it asked for.
- **CPU load.** Endpoints and the kernel's TCP processing wait for a CPU.

:class:`RunWatch` samples both every 0.2 s in a thread; a run records the
maxima beside its results, so a disturbed run is flagged, not believed.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


def tcp_mem_pages() -> int | None:
    """The machine's TCP memory in use, pages (/proc/net/sockstat; shared by every namespace)."""
    try:
        for line in Path("/proc/net/sockstat").read_text().splitlines():
            if line.startswith("TCP:"):
                words = line.split()
                return int(words[words.index("mem") + 1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def tcp_mem_pressure_pages() -> int | None:
    """net.ipv4.tcp_mem's pressure threshold, pages: above it Linux shrinks every receive window to 4 MSS."""
    try:
        return int(Path("/proc/sys/net/ipv4/tcp_mem").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None


class RunWatch:
    """The largest TCP memory and 1-minute load average seen while a ``with`` block lasts."""

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s = interval_s
        self.max_pages = 0
        self.max_load = 0.0

    def _sample(self) -> None:
        self.max_pages = max(self.max_pages, tcp_mem_pages() or 0)
        try:
            self.max_load = max(self.max_load, os.getloadavg()[0])
        except OSError:
            pass

    def __enter__(self) -> RunWatch:
        self._sample()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def under_pressure(self) -> bool:
        limit = tcp_mem_pressure_pages()
        return limit is not None and self.max_pages >= limit

    def record(self) -> dict[str, float | int | bool]:
        """The fields a run's row carries."""
        return {
            "tcp_mem_max_pages": self.max_pages,
            "tcp_mem_pressure": self.under_pressure(),
            "load_max_1m": round(self.max_load, 2),
        }
