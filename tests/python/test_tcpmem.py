"""latlab.real.tcpmem: the TCP memory check that real-network tests and benchmarks make before measuring."""

from __future__ import annotations

import pytest

from latlab.real import tcpmem

SOCKSTAT = """\
sockets: used 40
TCP: inuse 3 orphan 1 tw 0 alloc 5 mem {mem}
UDP: inuse 0 mem 0
UDPLITE: inuse 0
RAW: inuse 0
FRAG: inuse 0 memory 0
"""
TCP_MEM = "287898\t383867\t575796\n"


def test_the_sockstat_and_tcp_mem_files_are_parsed() -> None:
    state = tcpmem.parse(SOCKSTAT.format(mem=205), TCP_MEM)
    assert state == tcpmem.TcpMemState(
        in_use_pages=205,
        low_pages=287898,
        pressure_pages=383867,
        high_pages=575796,
        sockets_in_use=3,
        orphans=1,
    )
    assert not state.under_pressure and state.unfit_reason() is None
    assert "205 pages in use of pressure threshold 383867" in state.describe()


@pytest.mark.parametrize(
    "mem, unfit, pressure",
    [(383866, True, False), (383867, True, True), (int(0.8 * 383867) - 1, False, False)],
)
def test_at_or_near_the_pressure_threshold_a_measurement_is_unfit(
    mem: int, unfit: bool, pressure: bool
) -> None:
    state = tcpmem.parse(SOCKSTAT.format(mem=mem), TCP_MEM)
    assert state.under_pressure is pressure
    reason = state.unfit_reason()
    assert (reason is not None) is unfit
    if unfit:
        assert "pressure threshold" in reason and str(mem) in reason
        assert ("above" in reason) is pressure


@pytest.mark.parametrize(
    "sockstat, tcp_mem, message",
    [
        ("sockets: used 1\nUDP: inuse 0 mem 0\n", TCP_MEM, "no 'TCP:' line"),
        ("TCP: inuse 3 orphan 1 tw 0 alloc 5\n", TCP_MEM, "no 'mem' field"),
        ("TCP: inuse 3 orphan\n", TCP_MEM, "not key-value pairs"),
        (SOCKSTAT.format(mem=1), "1 2\n", "three numbers"),
    ],
)
def test_malformed_files_are_named(sockstat: str, tcp_mem: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tcpmem.parse(sockstat, tcp_mem)


def test_unreadable_proc_files_mean_unknown_not_unfit(tmp_path) -> None:
    assert tcpmem.read(tmp_path / "no-sockstat", tmp_path / "no-tcp-mem") is None


def test_a_bench_refuses_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    state = tcpmem.parse(SOCKSTAT.format(mem=400000), TCP_MEM)
    monkeypatch.setattr(tcpmem, "read", lambda: state)
    with pytest.raises(SystemExit, match="proxy bench: not measuring: TCP memory is above"):
        tcpmem.require_fit("proxy bench")
    assert tcpmem.describe() == state.describe()


@pytest.mark.skipif(tcpmem.read() is None, reason="no /proc/net/sockstat (not Linux)")
def test_this_machine_is_read() -> None:
    state = tcpmem.read()
    assert state.pressure_pages > state.low_pages > 0 and state.in_use_pages >= 0
