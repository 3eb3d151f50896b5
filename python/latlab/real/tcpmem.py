"""Is the machine's TCP memory fit for a measurement? Checked before a real-network run measures.

Every TCP socket in every namespace counts against one machine-wide budget,
``net.ipv4.tcp_mem`` (three numbers, in pages: low, pressure, high). Once the
memory TCP holds (``TCP: ... mem N`` in /proc/net/sockstat, pages) passes the
second number, Linux throttles every TCP connection on the machine: receive
windows shrink to a few segments and a 20 Mbit/s path measures under 1 Mbit/s,
without any error.

Some kernels have an accounting bug that heavy MPTCP or splice traffic trips
(a WARNING in ``inet_sock_destruct`` in the kernel log): the count then stays
high after every socket is closed, and only a reboot clears it. A test or
benchmark that measured under that state would report a wrong figure, so it
asks :func:`unfit_reason` first and skips (tests) or refuses (benchmarks) with
the reason, and a benchmark prints :func:`describe` beside its results.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SOCKSTAT = Path("/proc/net/sockstat")
TCP_MEM = Path("/proc/sys/net/ipv4/tcp_mem")

#: Refuse to measure above this share of the pressure threshold. The measurement's own sockets
#: add to the count: a bulk TCP flow's buffers reach several MB (a few thousand pages), so a
#: machine already at 80 % of a threshold of tens of thousands of pages would cross it mid-run.
FIT_SHARE = 0.8


@dataclass(frozen=True)
class TcpMemState:
    """TCP's memory in use and net.ipv4.tcp_mem's thresholds, all in pages."""

    in_use_pages: int
    low_pages: int
    pressure_pages: int
    high_pages: int
    sockets_in_use: int | None = None
    orphans: int | None = None

    @property
    def under_pressure(self) -> bool:
        return self.in_use_pages >= self.pressure_pages

    def unfit_reason(self, share: float = FIT_SHARE) -> str | None:
        """Why a measurement now would be wrong, or None when TCP memory is clear of the threshold."""
        if self.in_use_pages < share * self.pressure_pages:
            return None
        where = "above" if self.under_pressure else f"within {100 * (1 - share):.0f} % of"
        return (
            f"TCP memory is {where} the pressure threshold ({self.describe()}), where Linux "
            "throttles every TCP connection on the machine; with no TCP sockets open this is the "
            "kernel's leaked-accounting bug (see inet_sock_destruct in the kernel log) and only a "
            "reboot clears it"
        )

    def describe(self) -> str:
        sockets = (
            "" if self.sockets_in_use is None else f", {self.sockets_in_use} TCP sockets in use"
        )
        return (
            f"tcp_mem {self.in_use_pages} pages in use of pressure threshold "
            f"{self.pressure_pages} (net.ipv4.tcp_mem = {self.low_pages} {self.pressure_pages} "
            f"{self.high_pages}){sockets}"
        )


def parse(sockstat_text: str, tcp_mem_text: str) -> TcpMemState:
    """Parse /proc/net/sockstat and /proc/sys/net/ipv4/tcp_mem; ValueError names what is malformed.

    The sockstat TCP line reads ``TCP: inuse 5 orphan 0 tw 2 alloc 7 mem 3``: key-value pairs.
    """
    tcp_line = next((line for line in sockstat_text.splitlines() if line.startswith("TCP:")), None)
    if tcp_line is None:
        raise ValueError("sockstat has no 'TCP:' line")
    words = tcp_line.split()[1:]
    if len(words) % 2:
        raise ValueError(f"sockstat's TCP line is not key-value pairs: {tcp_line!r}")
    fields = dict(zip(words[::2], words[1::2]))
    if "mem" not in fields:
        raise ValueError(f"sockstat's TCP line has no 'mem' field: {tcp_line!r}")
    limits = tcp_mem_text.split()
    if len(limits) != 3:
        raise ValueError(f"net.ipv4.tcp_mem should be three numbers, got {tcp_mem_text.strip()!r}")
    low, pressure, high = (int(x) for x in limits)

    def optional(key: str) -> int | None:
        return int(fields[key]) if key in fields else None

    return TcpMemState(
        in_use_pages=int(fields["mem"]),
        low_pages=low,
        pressure_pages=pressure,
        high_pages=high,
        sockets_in_use=optional("inuse"),
        orphans=optional("orphan"),
    )


def read(sockstat: Path = SOCKSTAT, tcp_mem: Path = TCP_MEM) -> TcpMemState | None:
    """This machine's state, or None where /proc does not tell (not Linux, or malformed)."""
    try:
        return parse(sockstat.read_text(), tcp_mem.read_text())
    except (OSError, ValueError):
        return None


def unfit_reason() -> str | None:
    """Why this machine's TCP memory would spoil a measurement now, or None if it would not."""
    state = read()
    return None if state is None else state.unfit_reason()


def describe() -> str:
    """One line for a benchmark's output: the TCP memory state its figures were measured under."""
    state = read()
    return "tcp_mem: unknown (no /proc/net/sockstat)" if state is None else state.describe()


def require_fit(what: str) -> None:
    """For benchmarks: exit with the reason instead of measuring under TCP memory pressure."""
    reason = unfit_reason()
    if reason:
        raise SystemExit(f"{what}: not measuring: {reason}")
