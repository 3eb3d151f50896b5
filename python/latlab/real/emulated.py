"""`run_emulated()`: a scenario's flows run by the Linux kernel over an emulated path.

``latlab run SCENARIO --emulate`` comes here. Three processes do the work:

1. ``latlab-net flows SCENARIO --plan`` checks that one emulated path can
   carry the scenario (TCP flows with a controller the kernel has and UDP
   sources, one node pair or a uniform dumbbell; see
   crates/net/src/flows/plan.rs) and
   names every unsupported key otherwise (exit code 2, a UserError here);
2. ``latlab-net emulate SCENARIO --stay`` builds the client and server
   namespaces and forwards between them through the scenario's own links
   (its first stdout line says where they are);
3. ``latlab-net flows`` runs the flows with the kernel's TCP (UDP sources on
   the simulator's own schedule) from the client namespace to the server
   namespace for ``duration_s`` and samples TCP_INFO.

The emulator is always stopped (SIGTERM, which deletes its namespaces; SIGKILL
after a grace period) whatever happens. The tables are those of a simulated
run (python/latlab/schema.py), built from the CSV files both tools wrote:
``flows`` and ``flow_samples`` from the flow engine, ``links`` and
``link_samples`` from the emulator (only the links on the emulated path),
with ``link_samples`` times moved onto the flows' clock. ``run_info`` has
``emulated = True``, the kernel release and any ``emulation_notes``; the
flows table has an ``emulated`` column too, so a table taken out of its
folder still says where it came from.

UDP flows have the simulator's UDP columns (``segments_sent``,
``packets_received``, ``owd_mean_ns``, ``owd_max_ns``, goodput and
throughput), measured at a real sink from a 16-byte stamp (sequence number,
send time) in each datagram, and three only a real run has: ``lost_pkts``
(sequence gaps at the sink), ``local_drops`` (sends the client's device
queue refused) and ``sink_drops`` (the sink socket's own drops). The
TCP-only columns (``cwnd_bytes``, ``srtt_ns``, ``retransmitted_segments``,
...) are empty for them, as in the simulator; ``owd_*`` and ``lost_pkts``
are empty for a source whose datagrams can be shorter than the stamp.
``run_info["client_device_drops"]`` counts packets of any flow that the
client namespace's TUN device dropped before the emulator read them (it fell
behind); they are in no link's drops, and a non-zero count adds a note.

ECN: ``tcp.ecn = true`` (for every TCP group alike: Linux's switch is per
namespace) has the flow engine set ``net.ipv4.tcp_ecn = 1`` in both
namespaces, else 0; ``run_info["tcp_ecn"]`` is the value it set. TCP rows
say what the kernel did: ``ecn`` (the connection negotiated ECN),
``ecn_seen`` (the sink received ECT or CE data) and ``delivered_ce`` (the
sender's tcpi_delivered_ce: segments acknowledged with ECE), which
``flow_samples`` has per sample too; the queue's marks are the ``links``
table's ``marks_pkts``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from time import perf_counter
from typing import Any

import pandas as pd

from latlab import frames, latency, schema
from latlab.results import Results
from latlab.scenario import Scenario, as_scenario

#: How long the emulator may take to print its ready line, and to exit on SIGTERM.
READY_TIMEOUT_S = 20.0
EXIT_TIMEOUT_S = 15.0


class EmulationUnavailable(Exception):
    """Emulation cannot run here (not root, no /dev/net/tun, no ip); the message says why."""


def unavailable_reason() -> str | None:
    """Why an emulated run cannot start on this machine, or None when it can be tried."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "emulation needs root (network namespaces and TUN devices)"
    if not os.path.exists("/dev/net/tun"):
        return "emulation needs /dev/net/tun (the TUN driver)"
    from shutil import which

    if which("ip") is None:
        return "emulation needs iproute2 ('ip' is not installed)"
    return None


def plan(binary: Path, scenario_path: Path) -> dict[str, Any]:
    """The flow engine's plan for ``scenario_path``; ScenarioError naming what cannot be emulated."""
    from latlab.errors import ScenarioError

    res = subprocess.run(
        [str(binary), "flows", str(scenario_path), "--plan"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if res.returncode != 0:
        msg = res.stderr.strip().removeprefix("error: ")
        raise ScenarioError(
            msg or f"latlab-net flows --plan failed with exit code {res.returncode}"
        )
    return json.loads(res.stdout)


def _read_ready(proc: subprocess.Popen) -> dict[str, Any]:
    """The emulator's ready line, or RuntimeError with its stderr if it died or hung first."""
    box: dict[str, str] = {}

    def read() -> None:
        assert proc.stdout is not None
        box["line"] = proc.stdout.readline()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(READY_TIMEOUT_S)
    line = box.get("line", "")
    if not line:
        _stop(proc)
        err = proc.stderr.read().strip() if proc.stderr is not None else ""
        raise RuntimeError(f"the emulator did not start: {err or 'no ready line'}")
    return json.loads(line)


def _stop(proc: subprocess.Popen) -> int:
    """SIGTERM (the emulator then deletes its namespaces), SIGKILL after a grace period."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def _read_csv(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    if not path.is_file() or path.stat().st_size == 0:
        return frames.empty_frame(columns)
    return pd.read_csv(path)


def _links_table(emu_links: pd.DataFrame, window_s: float) -> pd.DataFrame:
    """The simulator's ``links`` columns from the emulator's links.csv (columns it lacks are null)."""
    if not len(emu_links):
        return frames.empty_frame(schema.LINKS)
    df = emu_links.copy()
    ends = df["name"].str.split("->", n=1, expand=True)
    df["src"], df["dst"] = ends[0], ends[1]
    df["utilization"] = (
        df["departures_bytes"] * 8 / (df["rate_bps"].where(df["rate_bps"] > 0) * window_s)
    )
    for col in ("arrivals_bytes", "drops_bytes", "drops_early_pkts"):
        df[col] = pd.NA
    rest = [c for c in df.columns if c not in schema.LINKS]
    return df[[*schema.LINKS, *rest]]


def _conservation(emu_links: pd.DataFrame) -> pd.DataFrame:
    if not len(emu_links):
        return frames.empty_frame(schema.CONSERVATION)
    return pd.DataFrame(
        {
            "link": emu_links["name"],
            "arrivals": emu_links["arrivals_pkts"],
            "departures": emu_links["departures_pkts"],
            "drops": emu_links["drops_pkts"],
            "lost": emu_links["lost_pkts"],
            "queued": emu_links["queued_pkts"],
            "ok": emu_links["conservation_ok"].astype(bool),
        }
    )


def _emulator_timing_us(work: Path, stat: str) -> float | None:
    """How late the emulator wrote packets against their model times (`stat`: "p99_us" or
    "max_us", worst direction, µs).

    Its own measure of whether the machine kept up: a busy machine delays the emulator's
    thread, and every packet it forwards is then late by about as much. The p99 shows a
    machine too busy all along; the maximum shows one stall (a shared machine may keep the
    emulator off the CPU for a few hundred ms), which shifts a few seconds' rates.
    """
    try:
        summary = json.loads((work / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    values = [
        float(d["timing_error"][stat])
        for d in (summary.get("up"), summary.get("down"))
        if d and d.get("timing_error")
    ]
    return max(values, default=None)


def _notes(the_plan: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """The plan's notes, and a warning if packets were dropped before the emulator."""
    notes = list(the_plan.get("notes", []))
    drops = int(summary.get("client_device_drops") or 0)
    if drops:
        notes.append(
            f"{drops} packet(s) were dropped by the client namespace's TUN device before the emulator "
            "read them (it fell behind, e.g. on a busy machine); they count as lost for their flows "
            "but in no link's drops"
        )
    return notes


def run_emulated(
    scenario: Scenario | str | os.PathLike[str],
    outdir: str | os.PathLike[str],
    seed: int | None = None,
    quiet: bool = False,
    binary: Path | None = None,
    realtime: int | None = None,
) -> Results:
    """Run ``scenario``'s flows over its path emulated in real time; write and return the results.

    ``realtime`` runs the emulator's event loop at that SCHED_FIFO priority
    (1-99), so that other busy processes do not delay its packets.

    Raises:
        ScenarioError: the scenario is invalid or has features emulation does not support.
        EmulationUnavailable: not root, no TUN device or no iproute2.
        RuntimeError: the emulator or the flow engine failed.
    """
    from latlab.real.netbin import find_binary

    sc = as_scenario(scenario)
    if seed is not None:
        sc = sc.with_(seed=int(seed))
    binary = binary if binary is not None else find_binary()
    out = Path(outdir)
    work = out / "emulation"
    work.mkdir(parents=True, exist_ok=True)
    # The original file keeps relative trace paths working; an edited scenario is written out.
    source = Path(sc.source)
    if not sc.modified and source.is_file():
        path = source
    else:
        path = work / "scenario.toml"
        path.write_text(sc.to_toml(), encoding="utf-8")
    the_plan = plan(binary, path)
    reason = unavailable_reason()
    if reason is not None:
        raise EmulationUnavailable(reason)

    started = perf_counter()
    quiet_flag = ["--quiet"] if quiet else []
    rt_flag = ["--realtime", str(int(realtime))] if realtime else []
    emu = subprocess.Popen(
        [
            str(binary),
            "emulate",
            str(path),
            "--stay",
            "--out",
            str(work),
            "--quiet",
            *rt_flag,
            "--client",
            the_plan["client_node"],
            "--server",
            the_plan["server_node"],
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = _read_ready(emu)
        emu_t0_unix_ns = (
            time.time_ns()
        )  # the ready line is printed just before the emulator's clock starts
        if not quiet:
            print(
                f"emulating {the_plan['client_node']} -> {the_plan['server_node']} "
                f"({ready['client_ns']} -> {ready['server_ns']}), {len(the_plan['flows'])} flow(s) "
                f"for {the_plan['duration_ns'] / 1e9:g} s",
                flush=True,
            )
        flows_run = subprocess.run(
            [
                str(binary),
                "flows",
                str(path),
                "--client-ns",
                ready["client_ns"],
                "--server-ns",
                ready["server_ns"],
                "--server-addr",
                ready["server_addr"],
                "--out",
                str(work),
                *quiet_flag,
            ],
            capture_output=True,
            text=True,
        )
    finally:
        emu_code = _stop(emu)
    wall_s = perf_counter() - started
    if flows_run.returncode != 0:
        raise RuntimeError(
            f"latlab-net flows failed (exit code {flows_run.returncode}): {flows_run.stderr.strip()}"
        )
    if emu_code != 0:
        err = emu.stderr.read().strip() if emu.stderr is not None else ""
        raise RuntimeError(f"the emulator failed (exit code {emu_code}): {err}")

    summary = json.loads((work / "flows_summary.json").read_text(encoding="utf-8"))
    flows = _read_csv(work / "flows.csv", schema.FLOWS)
    flows["emulated"] = True
    for col in ("fast_recoveries",):  # the kernel does not count these per socket
        flows[col] = pd.NA
    flows = flows[[*schema.FLOWS, *[c for c in flows.columns if c not in schema.FLOWS]]]
    for col in (schema.NULLABLE_INT_COLUMNS | {"delivered_ce"}) & set(flows.columns):
        flows[col] = flows[col].astype("Int64")
    for col in {"ecn", "ecn_seen"} & set(flows.columns):  # empty for UDP flows
        flows[col] = flows[col].astype("boolean")
    flow_samples = _read_csv(work / "flow_samples.csv", schema.FLOW_SAMPLES)
    if "ssthresh_bytes" in flow_samples:
        flow_samples["ssthresh_bytes"] = flow_samples["ssthresh_bytes"].astype("Int64")
    link_samples = _read_csv(work / "link_samples.csv", schema.LINK_SAMPLES)
    if len(link_samples):
        # Onto the flows' clock (t = 0 when the flows' run began); rows before it are dropped.
        shift = int(summary["t0_unix_ns"]) - emu_t0_unix_ns
        link_samples["time_ns"] = link_samples["time_ns"] - shift
        link_samples = link_samples[
            (link_samples["time_ns"] >= 0) & (link_samples["time_ns"] <= summary["elapsed_ns"])
        ].reset_index(drop=True)
    emu_links = _read_csv(work / "links.csv", ())
    window_s = max(summary["elapsed_ns"] - summary["measure_from_ns"], 1) / 1e9
    tables = {
        "flows": flows,
        "flow_samples": flow_samples,
        "links": _links_table(emu_links, summary["elapsed_ns"] / 1e9),
        "link_samples": link_samples,
        # The kernel's srtt every sample interval in the measurement window (see latlab.latency).
        "latency_histogram": latency.exact_histogram(
            flow_samples[flow_samples["time_ns"] >= summary["measure_from_ns"]], "srtt", "srtt_ns"
        ),
    }
    run_info: dict[str, Any] = {
        "name": the_plan["scenario_name"],
        "seed": the_plan["seed"],
        "duration_s": summary["elapsed_ns"] / 1e9,
        "measure_window_s": window_s,
        "emulated": True,
        "mode": "emulated",
        "kernel": summary.get("kernel"),
        "emulated_path": f"{the_plan['client_node']} -> {the_plan['server_node']}",
        "emulation_notes": _notes(the_plan, summary),
        "client_device_drops": summary.get("client_device_drops"),
        "tcp_ecn": summary.get("tcp_ecn"),
        "emulator_timing_p99_us": _emulator_timing_us(work, "p99_us"),
        "emulator_timing_max_us": _emulator_timing_us(work, "max_us"),
        "stopped_early": summary.get("stopped_early", False),
        "wall_s": wall_s,
        "events": None,
        "n_flows": len(flows),
        "n_links": len(emu_links),
    }
    results = Results(
        tables=tables, run_info=run_info, conservation=_conservation(emu_links), scenario=sc
    )
    results.run_info["conservation_ok"] = results.conservation_ok
    results.write(out)
    return results
