"""latlab.real.hostload: the TCP memory and load a real run records beside its results."""

from __future__ import annotations

from pathlib import Path

import pytest

from latlab.real import hostload


def test_the_sockstat_line_is_read(monkeypatch):
    text = "sockets: used 20\nTCP: inuse 1 orphan 2 tw 0 alloc 427 mem 349983\nUDP: inuse 0 mem 0\n"
    real_read = Path.read_text
    monkeypatch.setattr(
        Path,
        "read_text",
        lambda self, *a, **k: (
            text if str(self) == "/proc/net/sockstat" else real_read(self, *a, **k)
        ),
    )
    assert hostload.tcp_mem_pages() == 349983


def test_a_run_watch_records_the_maxima_and_flags_pressure(monkeypatch):
    pages = iter([10, 500, 20, 30, 30, 30, 30, 30, 30, 30])
    monkeypatch.setattr(hostload, "tcp_mem_pages", lambda: next(pages, 30))
    monkeypatch.setattr(hostload, "tcp_mem_pressure_pages", lambda: 400)
    with hostload.RunWatch(interval_s=0.01) as w:
        import time

        time.sleep(0.1)
    rec = w.record()
    assert rec["tcp_mem_max_pages"] == 500 and rec["tcp_mem_pressure"] is True
    assert rec["load_max_1m"] >= 0
    monkeypatch.setattr(hostload, "tcp_mem_pressure_pages", lambda: 1000)
    assert w.record()["tcp_mem_pressure"] is False


@pytest.mark.skipif(
    not Path("/proc/net/sockstat").exists(), reason="no /proc/net/sockstat (not Linux)"
)
def test_this_machine_reports_its_tcp_memory():
    assert hostload.tcp_mem_pages() is not None and hostload.tcp_mem_pressure_pages() is not None
