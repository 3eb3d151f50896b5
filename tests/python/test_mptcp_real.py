"""The MPTCP-proxy study on real Linux MPTCP (latlab.studies.mptcp.real).

The quick real set runs when this machine has root, iproute2, MPTCP and a
built latlab-net; otherwise the test says why it skips. The machine may be
loaded (each row records the load and TCP memory it ran under), so the
checks are structure and physics that hold under load: a throttled subflow
cannot carry more than its rate, two paths with spare capacity carry more
than one, nothing is left behind. The report's rendering and the throttle
bookkeeping are also checked on synthetic rows, which needs no root.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from latlab.studies.mptcp import real as R

# Real network use: `make test` runs the tests marked realtime after the parallel run of the others,
# two test files at a time, so the real-time runs never compete with the CPU-bound simulations.
pytestmark = pytest.mark.realtime

#: The quick set at 40 % of the study's rates (wired 40, Wi-Fi 10, throttle 20 Mbit/s): the same physics, and
#: little enough traffic that a loaded 2-core machine does not become the bottleneck of the proxy or the client.
SETTINGS = replace(
    R.QUICK_REAL, wired_bps=40e6, wifi_bps=10e6, wifi_small_mtu_bps=8e6, throttle_bps=20e6
)


@pytest.fixture(scope="module")
def real_rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    reason = R.unavailable_reason()
    if reason:
        pytest.skip(reason)
    return R.run_real(tmp_path_factory.mktemp("mptcp-real"), SETTINGS)


@pytest.mark.slow
@pytest.mark.real_network
def test_every_case_has_a_complete_row(real_rows: list[dict]) -> None:
    names = [r["case"] for r in real_rows]
    # One row per transfer; the conversion case's small downloads make one row together.
    assert (
        len(names)
        == len(set(names))
        == sum(1 if c.experiment == "conversion" else len(c.labels) for c in R.cases(SETTINGS))
    )
    for r in real_rows:
        assert r["completed"], r["case"]
        assert r["bytes"] == r["size_bytes"]
        assert r["duration_s"] > 0 and r["goodput_bps"] > 0
        for key in (
            "load_max_1m",
            "tcp_mem_max_pages",
            "tcp_mem_pressure",
            "series",
            "retransmits",
        ):
            assert key in r, (r["case"], key)
        if r["transport"] == "mptcp":
            assert r["is_mptcp"], f"{r['case']} fell back to TCP"
            # Two subflows, except in the conversion case: its 100 KB downloads end on the wired path within a
            # few ms, before the Wi-Fi subflow's join crosses the Wi-Fi path (a race, lost more often on a busy machine).
            assert r["subflows"] == 2 or (r["experiment"] == "conversion" and r["subflows"] == 1), (
                r["case"]
            )
            # The proxy's per-subflow acknowledged bytes account for what the client read (headers aside).
            acked, sent = (
                r["wired_bytes"] + r["wifi_bytes"],
                r["size_bytes"] * r.get("connections", 1),
            )
            assert 0.95 * sent <= acked <= 1.05 * sent, (r["case"], acked)
            assert r["syn_conversion_ms"] >= 0 and r["data_conversion_ms"] >= 0
        # Every transfer crossed the ap router's emulator (the Wi-Fi path), which reported on it.
        assert r["wifi_delay_ms"] == SETTINGS.wifi_delay_ms and r["wifi_emu_up_pkts"] >= 0, r[
            "case"
        ]
        if r["path"] != "wired":
            assert r["wifi_emu_up_pkts"] > 0 and r["wifi_emu_down_pkts"] > 0, r["case"]
        if r["transport"] == "mptcp" and r["experiment"] != "conversion":
            # The Wi-Fi subflow's RTT cannot be below the path's propagation delay, both ways.
            assert r["srtt_wifi_ms"] >= 0.95 * 2 * SETTINGS.wifi_delay_ms, (
                r["case"],
                r["srtt_wifi_ms"],
            )
    conv = R._pick(real_rows, "conversion")
    assert conv and conv["connections"] == SETTINGS.conversion_connections
    assert conv["syn_conversion_ms"] <= conv["syn_conversion_ms_p99"]
    assert conv["data_conversion_ms"] <= conv["data_conversion_ms_p99"]


@pytest.mark.slow
@pytest.mark.real_network
def test_both_paths_beat_one_when_nothing_is_throttled(real_rows: list[dict]) -> None:
    wired = R._pick(real_rows, "baseline", path="wired")
    wifi = R._pick(real_rows, "baseline", path="wifi")
    mp = R._pick(real_rows, "mptcp")
    assert wired and wifi and mp
    rows = (mp, wired, wifi)
    seen = [(r["case"], r["goodput_bps"], r["load_max_1m"], r["tcp_mem_max_pages"]) for r in rows]
    # A single path cannot exceed its bottleneck (tbf), whatever the load (10 % for headers and timing).
    assert wired["goodput_bps"] <= 1.1 * SETTINGS.wired_bps
    assert wifi["goodput_bps"] <= 1.1 * SETTINGS.wifi_bps
    assert mp["wifi_bytes"] > 0
    if any(r["tcp_mem_pressure"] for r in rows):
        pytest.skip(f"TCP memory reached net.ipv4.tcp_mem's pressure threshold mid-run: {seen}")
    # The baseline is the wired path measured in this same set, on the same machine. The Wi-Fi
    # path adds 25 % to it (10 on 40 Mbit/s); the aggregate must beat the wired path alone, but
    # only a path that was the bottleneck can be out-carried: if the wired baseline or the MPTCP
    # run's wired subflow fell below 90 % of the wired path's rate (headers take 3.5 %, start-up
    # a few %), the endpoints ran short of CPU and the machine, not the paths, set the figures.
    wired_share = mp["wired_bytes"] * 8 / mp["duration_s"] / SETTINGS.wired_bps
    if min(wired["goodput_bps"] / SETTINGS.wired_bps, wired_share) < 0.9 and max(
        r["load_max_1m"] for r in rows
    ) > (os.cpu_count() or 1):
        pytest.skip(
            f"the machine was the bottleneck (load above its {os.cpu_count()} CPUs): {seen}"
        )
    # The Wi-Fi path adds capacity the wired one cannot use: while both subflows send, they carry more than the
    # wired path alone. Compared as the median of the per-window rates (0.5 s windows), not as the transfer's
    # mean: in 2 of 6 quick runs on an idle machine (and once in CI) both subflows stalled together for about
    # 0.6 s early in the transfer (wired 38 -> 5 Mbit/s, Wi-Fi 9 -> 4, at 0.6-1.3 s; both at once, so the
    # connection level, not either path, held them; which part of it is not measured), and that one stall set the 4-s transfer's mean (38.4 and
    # 39.5 Mbit/s against 43-45 without it) while the median windows stayed at 45.7-47 (wired alone: 38.2).
    # The margin: the Wi-Fi path adds 25 % (10 on 40 Mbit/s); at least 10 % of it must show.
    both, alone = (
        _median(_aggregate_rate(mp["series"])),
        _median(rate for _, rate in wired["series"]["wired"]),
    )
    assert both > 1.1 * alone, (both, alone, seen)


def _aggregate_rate(series: dict[str, list[list[float]]]) -> list[float]:
    """Mbit/s of both subflows at each of the wired subflow's sample times (the Wi-Fi sample within 50 ms)."""
    out = []
    for t, rate in series["wired"]:
        near_t, near_rate = min(series["wifi"], key=lambda p: abs(p[0] - t))
        if abs(near_t - t) < 0.05:
            out.append(rate + near_rate)
    return out


def _median(xs) -> float:
    xs = sorted(xs)
    assert xs, "no rate samples"
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


@pytest.mark.slow
@pytest.mark.real_network
def test_the_proxy_throttles_the_wired_subflow_and_cleans_up(real_rows: list[dict]) -> None:
    throttled = [r for r in real_rows if r["experiment"] == "throttle"]
    assert [r["label"] for r in throttled] == ["first", "repeated", "long"]
    for r in throttled:
        assert r["throttled"] and r["throttle_errors"] == 0, r["case"]
        assert r["throttle_latency_ms"] is not None and 0 <= r["throttle_latency_ms"] < 2000, r[
            "case"
        ]
        assert not r["htb_left_after_proxy_exit"], r["case"]
        after = r.get("wired_after_throttle_bps")
        if after is not None and after == after:
            assert after <= 1.1 * r["throttle_bps"], (r["case"], after)
    long = R._pick(real_rows, "throttle", label="long")
    mp = R._pick(real_rows, "mptcp")
    # Traffic shifts to Wi-Fi: its share grows once the wired subflow is held to half its path.
    assert long["wifi_share"] > mp["wifi_share"], (long["wifi_share"], mp["wifi_share"])


@pytest.mark.slow
@pytest.mark.real_network
def test_nothing_is_left_behind(real_rows: list[dict]) -> None:
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{R.NS_PREFIX}-{os.getpid()}-" not in names


@pytest.mark.slow
@pytest.mark.real_network
def test_report_section_renders_real_beside_simulated(
    real_rows: list[dict], tmp_path: Path
) -> None:
    sim = [
        {
            "experiment": "mptcp",
            "transport": "mptcp",
            "path": "both",
            "label": "",
            "size_bytes": R.QUICK_REAL.large_bytes,
            "buffer_mb": 0.72,
            "mtu_bytes": 1500,
            "throttle_bps": 0.0,
            "goodput_bps": 99.0e6,
            "wired_share": 0.8,
        }
    ]
    md = R.report_section(real_rows, sim, SETTINGS, figure_path="real.png")
    assert "| mptcp-mptcp-both-20MB | " in md and " / 99.0 |" in md
    assert R.figure(real_rows, tmp_path / "real.png").exists()


# ----- without root: bookkeeping on synthetic inputs --------------------------------------------------------------


def _sub(t_ms: float, remote: str, acked: int, token: int = 7) -> dict:
    return {
        "kind": "subflow",
        "t_ns": int(t_ms * 1e6),
        "conn": 1,
        "token": token,
        "local": "10.250.11.1:8080",
        "remote": remote,
        "bytes_acked": acked,
        "total_retrans": 1,
        "srtt_us": 2000,
    }


def test_throttle_fields_measure_latency_and_the_throttled_rate() -> None:
    case = R.Case("throttle", "mptcp", 5_000_000, throttle_bps=50e6, labels=("first",))
    wired = [_sub(t, "10.250.1.1:40000", int(t * 1e-3 * 50e6 / 8)) for t in range(0, 1001, 50)]
    log = [
        {
            "kind": "pm",
            "t_ns": 10_000_000,
            "event": "SubEstablished(SubflowEvent { token: 7, .. })",
        },
        {"kind": "throttle", "t_ns": 13_000_000, "token": 7, "install_ms": 2.5},
    ]
    out = R._throttle_fields(case, wired + [_sub(500, "10.250.2.1:40001", 100)], log)
    assert out["throttled"] and out["throttle_errors"] == 0
    # Installing began 3 ms after the second subflow and took 2.5 ms: active 5.5 ms after it.
    assert out["throttle_latency_ms"] == pytest.approx(5.5)
    assert out["wired_after_throttle_bps"] == pytest.approx(50e6, rel=0.02)
    assert R._throttle_fields(case, wired, [])["throttled"] is False


def test_unavailable_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(R.os, "geteuid", lambda: 1000)
    assert "root" in (R.unavailable_reason() or "")
    with pytest.raises(R.RealUnavailable, match="root"):
        R.run_real(Path("/nonexistent"), R.QUICK_REAL)


def test_the_wifi_path_scenario_is_the_settings_link() -> None:
    import tomllib

    sc = tomllib.loads(R.wifi_scenario(R.QUICK_REAL, 19.8e6))
    (link,) = sc["topology"]["links"]
    assert (link["from"], link["to"]) == ("client", "proxy")
    assert link["reverse_rate_bps"] == 19.8e6 and link["rate_bps"] == R.QUICK_REAL.wifi_uplink_bps
    assert link["delay_ms"] == R.WIFI_PATH_DELAY_MS
    assert link["queue"] == {"kind": "droptail", "limit_packets": R.QUICK_REAL.queue_packets}


def test_paths_and_cases() -> None:
    assert R._path_of("10.250.1.1:5") == "wired" and R._path_of("10.250.2.1:5") == "wifi"
    names = [c.name for c in R.cases(R.QUICK_REAL)]
    assert len(names) == len(set(names))
    assert {c.experiment for c in R.cases(R.QUICK_REAL)} == {
        "baseline",
        "mptcp",
        "rbuf",
        "mtu",
        "throttle",
        "conversion",
    }
