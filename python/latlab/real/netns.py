"""A two-host testbed in Linux network namespaces, for latlab's real-network tools.

:func:`bottleneck_testbed` builds a sender namespace and a receiver namespace
joined by a veth pair, with a token-bucket (tbf) bottleneck on the sender's
side: the data direction is shaped, the feedback direction is not. It is
what ``tests/python/test_media_netns.py`` and ``benches/media_fairness.py``
run ``latlab media send|recv`` through, and what a user can use for their own
experiments::

    with bottleneck_testbed("demo", rate_bps=2_000_000, burst_bytes=3000, limit_bytes=43_970) as tb:
        subprocess.Popen(tb.in_rx(["latlab-net", "media", "recv", "--listen", f"{tb.rx_addr}:9000"]))
        ...

It needs root and iproute2 (``ip``, ``tc``); when either is missing, or a
namespace cannot be created, it raises :class:`TestbedUnavailable` with the
reason, before anything is left behind. The namespaces (whose names carry
the process id) are deleted on exit, whatever happened inside.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: Distinguishes testbeds one process builds one after another (interface names must be unique).
_serial = itertools.count()


class TestbedUnavailable(Exception):
    """The testbed cannot be built here; the message says why (not root, no iproute2, ...)."""

    __test__ = False  # not a pytest test class


@dataclass(frozen=True)
class Testbed:
    """Names and addresses of a built testbed."""

    __test__ = False  # not a pytest test class

    tx_ns: str
    rx_ns: str
    tx_if: str
    rx_if: str
    tx_addr: str
    rx_addr: str

    def in_tx(self, cmd: list[str]) -> list[str]:
        """``cmd`` run in the sender's namespace."""
        return ["ip", "netns", "exec", self.tx_ns, *cmd]

    def in_rx(self, cmd: list[str]) -> list[str]:
        """``cmd`` run in the receiver's namespace."""
        return ["ip", "netns", "exec", self.rx_ns, *cmd]

    def qdisc_stats(self) -> str:
        """``tc -s qdisc`` of the bottleneck (sent, dropped, overlimits, backlog)."""
        res = _run(self.in_tx(["tc", "-s", "qdisc", "show", "dev", self.tx_if]))
        return res.stdout.strip()


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=20)


def unavailable_reason() -> str | None:
    """Why no testbed can be built on this machine, or None when it can be tried."""
    if os.geteuid() != 0:
        return "network namespaces and tc need root"
    missing = [t for t in ("ip", "tc") if shutil.which(t) is None]
    if missing:
        return f"iproute2 is not installed ({', '.join(missing)} missing)"
    return None


@contextmanager
def bottleneck_testbed(
    tag: str,
    rate_bps: int,
    burst_bytes: int,
    limit_bytes: int,
    tx_addr: str = "10.77.0.1",
    rx_addr: str = "10.77.0.2",
) -> Iterator[Testbed]:
    """Build the two namespaces, the veth pair and the tbf (rate, bucket and queue limit in bytes)."""
    reason = unavailable_reason()
    if reason:
        raise TestbedUnavailable(reason)
    pid, k = os.getpid(), next(_serial)
    tb = Testbed(
        tx_ns=f"latlab-{tag}-tx-{pid}-{k}",
        rx_ns=f"latlab-{tag}-rx-{pid}-{k}",
        tx_if=f"ltx{pid}k{k}"[:15],
        rx_if=f"lrx{pid}k{k}"[:15],
        tx_addr=tx_addr,
        rx_addr=rx_addr,
    )
    created: list[str] = []
    try:
        for ns in (tb.tx_ns, tb.rx_ns):
            res = _run(["ip", "netns", "add", ns])
            if res.returncode != 0:
                raise TestbedUnavailable(f"cannot create a network namespace: {res.stderr.strip()}")
            created.append(ns)
        steps = [
            [
                "ip",
                "link",
                "add",
                tb.tx_if,
                "netns",
                tb.tx_ns,
                "type",
                "veth",
                "peer",
                "name",
                tb.rx_if,
                "netns",
                tb.rx_ns,
            ],
            ["ip", "-n", tb.tx_ns, "addr", "add", f"{tx_addr}/24", "dev", tb.tx_if],
            ["ip", "-n", tb.rx_ns, "addr", "add", f"{rx_addr}/24", "dev", tb.rx_if],
            ["ip", "-n", tb.tx_ns, "link", "set", "lo", "up"],
            ["ip", "-n", tb.rx_ns, "link", "set", "lo", "up"],
            ["ip", "-n", tb.tx_ns, "link", "set", tb.tx_if, "up"],
            ["ip", "-n", tb.rx_ns, "link", "set", tb.rx_if, "up"],
            # The bottleneck: the data direction only; feedback is unshaped.
            tb.in_tx(
                [
                    "tc",
                    "qdisc",
                    "add",
                    "dev",
                    tb.tx_if,
                    "root",
                    "tbf",
                    "rate",
                    f"{rate_bps}bit",
                    "burst",
                    str(burst_bytes),
                    "limit",
                    str(limit_bytes),
                ]
            ),
        ]
        for cmd in steps:
            res = _run(cmd)
            if res.returncode != 0:
                raise TestbedUnavailable(
                    f"cannot set up the namespaces ({' '.join(cmd)}): {res.stderr.strip()}"
                )
        yield tb
    finally:
        # Deleting a namespace deletes its end of the veth pair, and so the pair.
        for ns in created:
            _run(["ip", "netns", "del", ns])
