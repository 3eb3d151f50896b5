"""The study's receivers on real Linux TCP, beside the same path simulated.

``latlab reproduce rtac --real`` (root) runs this after the simulated study.
The path is one bloated access link (30 Mbit/s, 20 ms each way, a
1000-packet DropTail buffer: ten times the BDP), emulated in real time by
``latlab-net emulate`` from the same scenario file the simulator reads. A
Linux CUBIC sender (timestamps on) in the server namespace sends bulk data to
``latlab-net recv`` in the client namespace, whose advertised window the
receiver-window controller sets (Linux auto-tuning with tcp_rmem_max
2560 KB, DRWA with λ = 3, RTAC at each operating point θ). The RTT is the
sender's own smoothed RTT (TCP_INFO tcpi_rtt, every 100 ms); goodput is what
the receiver read; both are averaged after a warm-up.

Runs: each receiver alone, then an auto-tuning receiver beside a DRWA or an
RTAC receiver through the same buffer ("direct competition"). The same runs
are simulated on the same path (the scenario file with the same controllers
and parameters; CUBIC sender, timestamps on), so every real figure has its
simulated twin. A second, shallower buffer (400 packets, four BDPs) runs the
study's θ = 1.38 again: RTAC's share beside a loss-based flow depends on how
far that flow can push the RTT, and so on the buffer's depth.

Rows go to ``real.jsonl`` as they come. A later run into the same directory
with the same settings keeps the cases already measured there and runs only
the rest, so an interrupted run resumes; with other settings the old rows are
kept beside as ``real.jsonl.prev``.
"""

from __future__ import annotations

import csv
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from latlab.real.hostload import RunWatch
from latlab.studies._real_runs import (
    append_row,
    find_exe,
    load_rows,
    measure_case,
    rows_where,
    testbed_unavailable_reason,
)
from latlab.studies._verdict import Reference, Verdict, within
from latlab.studies.rtac.metrics import NO_ESTIMATES, relative_error

ROOT = Path(__file__).resolve().parents[4]
#: Scenario files ship with the repository; an installed package finds them beside the sources.
PATH_FILE = ROOT / "scenarios" / "emulate-bloated.toml"
LINK_RATE_BPS = 30e6
RTT_MIN_S = 0.040
MSS_BYTES = 1448
RMEM_MAX_BYTES = 2_621_440
PORT0 = 5101
#: RTAC operating points run by default: the study's, and one that holds more of its share beside a full buffer.
THETAS = (1.38, 2.5)
#: The path file's buffer (packets): ten BDPs, up to 400 ms of queue.
BUFFER_PACKETS = 1000
#: A second buffer for the study's θ: four BDPs (160 ms of queue), the depth at which a simulated sweep of the
#: buffer (docs/rtac/report.md, section 6) puts RTAC's share beside auto-tuning near the study's.
SHALLOW_BUFFER_PACKETS = 400
BDP_PACKETS = LINK_RATE_BPS * RTT_MIN_S / 8 / 1500

#: A bulk sender that prints one JSON line: bytes sent, its srtt samples (tcpi_rtt, µs, at offset 68), and every
#: 100 ms its state for setting the receiver's estimates beside it: CLOCK_MONOTONIC (the receiver's ``mono_s``),
#: srtt, cwnd (tcpi_snd_cwnd at 80 × tcpi_snd_mss at 16) and the data in flight (Linux's tcp_packets_in_flight:
#: unacked − sacked − lost + retrans, offsets 24, 28, 32, 36, × the MSS), in bytes.
#: Its send buffer is forced large: the flight is bounded by the receiver's window and by losses only.
SENDER = r"""
import json, socket, struct, sys, time
host, port, seconds, cc = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
# SO_SNDBUFFORCE (32; root): a send buffer that never bounds the flight, so the receiver's window and the
# path's losses do, as in the simulator (net.ipv4.tcp_wmem's 4 MB default caps a flight near 920 packets).
# TCP_NOTSENT_LOWAT (25) keeps the unsent part of it small: the buffer holds the flight, not megabytes of
# queued data, which would count against the machine-wide TCP memory (net.ipv4.tcp_mem).
try:
    s.setsockopt(socket.SOL_SOCKET, 32, 16 << 20)
except OSError:
    pass
s.setsockopt(socket.IPPROTO_TCP, 25, 256 << 10)
for _ in range(50):
    try:
        s.connect((host, port)); break
    except OSError:
        time.sleep(0.1)
s.setblocking(False)
buf = b"x" * 65536
t0 = time.monotonic(); nxt = t0; rtts = []; state = []; sent = 0
while time.monotonic() - t0 < seconds:
    try:
        sent += s.send(buf)
    except BlockingIOError:
        time.sleep(0.001)
    now = time.monotonic()
    if now >= nxt:
        info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        srtt_ms = struct.unpack_from("I", info, 68)[0] / 1000.0
        mss = struct.unpack_from("I", info, 16)[0]
        unacked, sacked, lost, retrans = struct.unpack_from("4I", info, 24)
        cwnd = struct.unpack_from("I", info, 80)[0]
        rtts.append((now - t0, srtt_ms))
        state.append((now, srtt_ms, cwnd * mss, max(unacked - sacked - lost + retrans, 0) * mss))
        nxt += 0.1
# Abort (RST): an orderly close would leave an orphan socket pushing its queue into a path that is about to go.
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
print(json.dumps({"sent": sent, "rtt_ms": rtts, "state": state}))
"""


@dataclass(frozen=True)
class RealSettings:
    #: Each receiver alone: its window settles within a few seconds.
    seconds: float = 60.0
    warmup_s: float = 10.0
    #: Two receivers through one buffer. A CUBIC epoch at this path's loaded RTT (about 380 ms) lasts 7-10 s, and
    #: two CUBIC flows take minutes of epochs to even out a head start: over 60 s two auto-tuning receivers split
    #: 35/65, over 300 s with the first 60 s left out 51/49 (simulated and real alike).
    competition_seconds: float = 300.0
    competition_warmup_s: float = 60.0
    thetas: tuple[float, ...] = THETAS
    #: The emulator's SCHED_FIFO priority, so other jobs do not delay packets (0: off).
    realtime: int = 10
    #: Runs of each competition case. Two loss-based flows through one buffer split it differently from run to
    #: run (the sawteeth fall where they fall); the control case, two auto-tuning receivers, measures that spread on
    #: the same path.
    repeats: int = 2
    #: The path's DropTail buffer (packets).
    buffer_packets: int = BUFFER_PACKETS
    #: A second buffer on which the study's θ = 1.38 runs again (each receiver alone and beside auto-tuning, and
    #: the control); None: not run.
    shallow_buffer_packets: int | None = SHALLOW_BUFFER_PACKETS
    #: Buffers (packets) of the simulated sweep at the study's θ: RTAC's, DRWA's and a second auto-tuning
    #: receiver's share beside auto-tuning at each depth (competition-length runs; simulated only).
    sweep_buffers: tuple[int, ...] = (150, 200, 300, 400, 500, 700, 1000)

    def for_case(self, receivers: Sequence[str]) -> RealSettings:
        """The settings of one case: a competition case runs for ``competition_seconds``."""
        if len(receivers) < 2:
            return self
        return replace(self, seconds=self.competition_seconds, warmup_s=self.competition_warmup_s)


def split(receiver: str) -> tuple[str, float | None]:
    """``"rtac@2"`` → ``("rtac", 2.0)``; other receivers carry no θ."""
    name, _, theta = receiver.partition("@")
    return name, float(theta) if theta else None


def label(receiver: str) -> str:
    name, theta = split(receiver)
    return f"rtac (θ = {theta:g})" if name == "rtac" else name


def controller_params(receiver: str) -> dict[str, float]:
    """The controller's parameters, the same for ``latlab-net recv`` and the simulator's tcp.rwnd_params."""
    name, theta = split(receiver)
    out = {"rmem_max_bytes": float(RMEM_MAX_BYTES)}
    if name == "rtac":
        out.update(theta=theta or 1.38, link_rate_bps=LINK_RATE_BPS)
    return out


def cases(settings: RealSettings) -> list[tuple[int, list[str]]]:
    """(buffer, receivers downloading at once), one per case: on the main buffer each receiver alone, then each
    beside auto-tuning (the last, two auto-tuning receivers, is the control: how two equal flows split the buffer);
    then the same for the study's θ alone on the shallow buffer, if any."""

    def of(thetas: Sequence[float]) -> list[list[str]]:
        rtacs = [f"rtac@{t:g}" for t in thetas]
        return (
            [["autotuning"], ["drwa"]]
            + [[r] for r in rtacs]
            + [["autotuning", r] for r in rtacs]
            + [["autotuning", "drwa"], ["autotuning", "autotuning"]]
        )

    out = [(settings.buffer_packets, c) for c in of(settings.thetas)]
    if (
        settings.shallow_buffer_packets
        and settings.shallow_buffer_packets != settings.buffer_packets
    ):
        out += [(settings.shallow_buffer_packets, c) for c in of((1.38,))]
    return out


def path_text(buffer_packets: int) -> str:
    """The path's scenario file with its buffer set to ``buffer_packets``."""
    text = PATH_FILE.read_text(encoding="utf-8")
    new, n = re.subn(r"limit_packets = \d+", f"limit_packets = {int(buffer_packets)}", text)
    if n != 1:
        raise RuntimeError(
            f"{PATH_FILE}: expected one 'limit_packets = N' to set the buffer, found {n}"
        )
    return new


def row_buffer(row: dict[str, Any]) -> int:
    """The buffer a row ran on (rows written before the buffer was recorded ran on the path file's)."""
    return int(row.get("buffer_packets", BUFFER_PACKETS))


def row_case(row: dict[str, Any]) -> str:
    """The case a row belongs to, its receivers in flow order joined by '+'."""
    if "case" in row:
        return row["case"]
    if row["with"] == "alone":
        return row["receiver"]
    pair = (
        [row["receiver"], row["with"]]
        if row.get("flow", 0) == 0
        else [row["with"], row["receiver"]]
    )
    return "+".join(pair)


def unavailable_reason() -> str | None:
    """Why the real runs cannot happen here, or None."""
    reason = testbed_unavailable_reason(
        "the real runs", "network namespaces and TUN devices", tools=("ip",)
    )
    if reason:
        return reason
    if not Path("/dev/net/tun").exists():
        return "the real runs need /dev/net/tun"
    if not PATH_FILE.is_file():
        return f"the path's scenario file is missing: {PATH_FILE}"
    return None


class Emulator:
    """``latlab-net emulate PATH --stay`` for the duration of a ``with`` block; always terminated."""

    def __init__(self, exe: str, outdir: Path, realtime: int = 0, path_file: Path = PATH_FILE):
        self.exe, self.outdir, self.realtime, self.path_file = exe, outdir, realtime, path_file

    def __enter__(self) -> Emulator:
        rt = ["--realtime", str(self.realtime)] if self.realtime else []
        self.proc = subprocess.Popen(
            [
                self.exe,
                "emulate",
                str(self.path_file),
                "--stay",
                "--quiet",
                *rt,
                "--out",
                str(self.outdir),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            self.proc.wait(10)
            raise RuntimeError(
                f"the emulator exited with {self.proc.returncode} before it was ready"
            )
        self.ready = json.loads(line)
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_case(
    settings: RealSettings,
    exe: str,
    receivers: list[str],
    work: Path,
    buffer_packets: int | None = None,
) -> list[dict[str, Any]]:
    """Download to one receiver each at once through the emulated path (its buffer ``buffer_packets``, by default
    the settings'); one row per flow.

    A row records ``tcp_mem_pressure``: whether the machine's TCP memory
    passed net.ipv4.tcp_mem's pressure threshold during the run (other jobs'
    sockets count too). Under pressure Linux shrinks every receive window to
    four segments, so such a run does not measure the receivers.
    """
    buffer_packets = buffer_packets or settings.buffer_packets
    path_file = PATH_FILE
    if buffer_packets != BUFFER_PACKETS:
        path_file = work / f"path-{buffer_packets}.toml"
        path_file.write_text(path_text(buffer_packets), encoding="utf-8")
    with Emulator(exe, work / "emu", settings.realtime, path_file) as emu, RunWatch() as watch:
        ns_c, ns_s, addr = emu.ready["client_ns"], emu.ready["server_ns"], emu.ready["client_addr"]
        recvs, senders = [], []
        for i, r in enumerate(receivers):
            rec = work / f"recv{i}.csv"
            params = [a for k, v in controller_params(r).items() for a in ("--param", f"{k}={v:g}")]
            recvs.append(
                (
                    r,
                    rec,
                    subprocess.Popen(
                        [
                            "ip",
                            "netns",
                            "exec",
                            ns_c,
                            exe,
                            "recv",
                            "--listen",
                            f"{addr}:{PORT0 + i}",
                            "--controller",
                            split(r)[0],
                            "--duration-s",
                            str(settings.seconds + 5),
                            "--record",
                            str(rec),
                            "--quiet",
                            *params,
                        ]
                    ),
                )
            )
        time.sleep(0.5)
        for i, _ in enumerate(receivers):
            senders.append(
                subprocess.Popen(
                    [
                        "ip",
                        "netns",
                        "exec",
                        ns_s,
                        sys.executable,
                        "-c",
                        SENDER,
                        addr,
                        str(PORT0 + i),
                        str(settings.seconds),
                        "cubic",
                    ],
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        outs = [
            json.loads(s.communicate(timeout=settings.seconds + 30)[0].strip().splitlines()[-1])
            for s in senders
        ]
        rows = []
        for i, ((r, rec, proc), out) in enumerate(zip(recvs, outs)):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.terminate()
                proc.wait()
            with open(rec) as f:
                recv_rows = list(csv.DictReader(f))
            good = [
                float(x["goodput_bps"])
                for x in recv_rows
                if settings.warmup_s <= float(x["t_s"]) <= settings.seconds
            ]
            rtt = sorted(v for t, v in out["rtt_ms"] if t >= settings.warmup_s)
            others = [x for j, x in enumerate(receivers) if j != i]
            kept = [
                x for x in recv_rows if settings.warmup_s <= float(x["t_s"]) <= settings.seconds
            ]
            rows.append(
                {
                    "receiver": r,
                    "with": "+".join(others) or "alone",
                    "mode": "real",
                    "flow": i,
                    "buffer_packets": buffer_packets,
                    "case": "+".join(receivers),
                    "goodput_mbps": sum(good) / len(good) / 1e6 if good else 0.0,
                    "rtt_mean_ms": sum(rtt) / len(rtt) if rtt else float("nan"),
                    "rtt_p50_ms": rtt[len(rtt) // 2] if rtt else float("nan"),
                    # Times the kernel replaced the receiver's clamp and recv set it again (recv/clamp.rs).
                    "clamp_restores": int(recv_rows[-1].get("clamp_restores") or 0)
                    if recv_rows
                    else 0,
                    **estimate_errors(kept, out.get("state", [])),
                }
            )
    for row in rows:
        row.update(watch.record())
    return rows


#: A receiver row and a sender sample are set side by side when they lie at most this far apart (the sender
#: samples every 100 ms).
PAIRING_S = 0.06


def estimate_errors(recv_rows: list[dict[str, str]], state: list[list[float]]) -> dict[str, float]:
    """How far a real receiver's estimates sit from its sender's TCP_INFO, as the simulator's ``receiver_samples``.

    Each receiver row (its controller's RTT and window estimates, at ``mono_s``) is paired with the sender sample
    nearest in CLOCK_MONOTONIC, both processes reading the one host clock; rows with no sample within
    ``PAIRING_S`` are left out. The same error columns as the simulated flows (``metrics.receiver_errors``).
    """
    if not state or not recv_rows or "mono_s" not in recv_rows[0]:
        return dict(NO_ESTIMATES)
    sender = np.asarray(state, dtype=float)
    mono = np.array([float(r["mono_s"]) for r in recv_rows])
    near = np.clip(np.searchsorted(sender[:, 0], mono), 1, len(sender) - 1)
    near -= (mono - sender[near - 1, 0]) < (sender[near, 0] - mono)
    ok = np.abs(sender[near, 0] - mono) <= PAIRING_S
    s = sender[near][ok]

    def column(key: str) -> np.ndarray:
        return np.array(
            [float(r[key]) if r.get(key) else np.nan for r, k in zip(recv_rows, ok) if k]
        )

    rtt_err, rtt_bias = relative_error(column("controller_rtt_ms"), s[:, 1])
    win = column("window_est_bytes")
    win_err, win_bias = relative_error(win, s[:, 2])
    flight_err, _ = relative_error(win, s[:, 3])
    return {
        "rcv_rtt_err": rtt_err,
        "rcv_rtt_bias": rtt_bias,
        "rcv_win_err": win_err,
        "rcv_win_bias": win_bias,
        "rcv_win_err_flight": flight_err,
        "rcv_samples": int(np.isfinite(win).sum()),
    }


def simulate_case(
    settings: RealSettings,
    receivers: list[str],
    buffer_packets: int | None = None,
) -> list[dict[str, Any]]:
    """The same run in the simulator: the path's scenario file (its buffer ``buffer_packets``, by default the
    settings'), one CUBIC download per receiver.

    The sender is Linux's: the ``linux`` preset (MSS 1448 in 1500-byte packets, timestamps, SACK, delayed ACKs),
    so the 1000-packet buffer holds the same bytes and the same 400 ms as the emulated one."""
    import latlab
    from latlab.scenario import Scenario

    buffer_packets = buffer_packets or settings.buffer_packets
    sc = Scenario.from_toml_str(path_text(buffer_packets), source=str(PATH_FILE))
    flows = [
        {
            "name": f"r{i}",
            "src": "server",
            "dst": "client",
            "cc": "cubic",
            "tcp": {
                "preset": "linux",
                "rwnd_controller": split(r)[0],
                "rwnd_params": controller_params(r),
            },
        }
        for i, r in enumerate(receivers)
    ]
    sc = sc.with_(
        flows=flows,
        duration_s=settings.seconds,
        measure_from_s=settings.warmup_s,
        sample_interval_ms=100,
    )
    res = latlab.run(sc)
    f = res.flows.sort_values("flow_id").reset_index(drop=True)
    s = res.flow_samples[res.flow_samples["time_ns"] >= settings.warmup_s * 1e9]
    rows = []
    for i, r in enumerate(receivers):
        srtt = s[s["flow_id"] == f.loc[i, "flow_id"]]["srtt_ns"].sort_values() / 1e6
        others = [x for j, x in enumerate(receivers) if j != i]
        rows.append(
            {
                "receiver": r,
                "with": "+".join(others) or "alone",
                "mode": "sim",
                "flow": i,
                "buffer_packets": buffer_packets,
                "case": "+".join(receivers),
                "goodput_mbps": float(f.loc[i, "goodput_bps"]) / 1e6,
                "rtt_mean_ms": float(srtt.mean()) if len(srtt) else float("nan"),
                "rtt_p50_ms": float(srtt.iloc[len(srtt) // 2]) if len(srtt) else float("nan"),
            }
        )
    return rows


def buffer_sweep(settings: RealSettings) -> list[dict[str, Any]]:
    """The simulated sweep of the buffer at the study's θ (rows with mode "sweep"): at each depth each receiver
    alone, and RTAC, DRWA and a second auto-tuning receiver beside auto-tuning over competition-length runs."""
    out = []
    for buf in settings.sweep_buffers:
        for case in (
            ["autotuning"],
            ["rtac@1.38"],
            ["autotuning", "rtac@1.38"],
            ["autotuning", "drwa"],
            ["autotuning", "autotuning"],
        ):
            for row in simulate_case(settings.for_case(case), case, buf):
                out.append({**row, "mode": "sweep", "run": 0})
    return out


def _settings_key(settings: RealSettings) -> dict[str, Any]:
    """What decides whether earlier rows can stand for a case (the emulator's priority does not)."""
    key = asdict(settings)
    key.pop("realtime")
    key["thetas"] = list(key["thetas"])
    key["sweep_buffers"] = list(key["sweep_buffers"])
    return key


def _earlier_rows(outdir: Path, settings: RealSettings) -> list[dict[str, Any]]:
    """Rows of an earlier run into ``outdir`` with the same settings (to resume); rows of other settings are kept
    beside as real.jsonl.prev, not lost."""
    jsonl, meta = outdir / "real.jsonl", outdir / "real-settings.json"
    if not jsonl.exists():
        return []
    try:
        same = json.loads(meta.read_text()) == _settings_key(settings)
        rows = load_rows(jsonl) if same else []
    except (OSError, ValueError):
        same, rows = False, []
    if not same and jsonl.stat().st_size:
        jsonl.replace(outdir / "real.jsonl.prev")
    return rows


def earlier_section(outdir: Path) -> str | None:
    """Section 6 from the rows an earlier ``--real`` run left in ``outdir/real.jsonl``, with the settings it recorded
    in ``real-settings.json`` (the defaults without it), rendered again without running anything; None without
    rows."""
    jsonl, meta = outdir / "real.jsonl", outdir / "real-settings.json"
    rows = load_rows(jsonl) if jsonl.exists() else []
    if not rows:
        return None
    settings = RealSettings()
    if meta.exists():
        key = json.loads(meta.read_text())
        key["thetas"] = tuple(key["thetas"])
        key["sweep_buffers"] = tuple(key["sweep_buffers"])
        settings = RealSettings(**key)
    command = "latlab reproduce rtac --real"
    return (
        render(rows, settings, command)
        + f"\nThese real rows are from earlier runs of `{command}`, kept in `real.jsonl`; this report renders them "
        "again without running them.\n"
    )


def run_real(
    settings: RealSettings,
    outdir: Path,
    exe: str | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    kept_runs: list[tuple[int, str, int]] | None = None,
) -> list[dict[str, Any]]:
    """Every case real and simulated; rows also go to ``outdir/real.jsonl`` as they come. Cases already measured
    there with the same settings are kept, not run again (and listed in ``kept_runs`` as (buffer, case, run))."""
    exe = exe or find_exe()
    outdir.mkdir(parents=True, exist_ok=True)
    earlier = _earlier_rows(outdir, settings)
    jsonl = outdir / "real.jsonl"
    (outdir / "real-settings.json").write_text(json.dumps(_settings_key(settings)) + "\n")

    def kept(buffer: int, case: list[str], k: int) -> list[dict[str, Any]]:
        """The earlier rows of run ``k`` of a case, if complete: one real row per flow, and for the first run
        the simulated twin's too."""
        name = "+".join(case)
        mine = [
            r
            for r in earlier
            if row_buffer(r) == buffer and row_case(r) == name and r.get("run", 0) == k
        ]
        out = []
        for mode in ("real", "sim") if k == 0 else ("real",):
            of_mode = [r for r in mine if r["mode"] == mode]
            if len(of_mode) < len(case):
                return []
            out += of_mode[
                -len(case) :
            ]  # an interrupted attempt may have left a partial set before these
        return out

    rows: list[dict[str, Any]] = []
    if not earlier:
        jsonl.write_text("")
    with tempfile.TemporaryDirectory(prefix="latlab-rtac-real-") as tmp:
        for i, (buffer, case) in enumerate(cases(settings)):
            for k in range(settings.repeats if len(case) > 1 else 1):
                old = kept(buffer, case, k)
                if old:
                    new = old
                    if kept_runs is not None:
                        kept_runs.append((buffer, "+".join(case), k))
                else:
                    work = Path(tmp) / f"case{i}-{k}"
                    work.mkdir()
                    measured = measure_case(
                        lambda w, case=case, buffer=buffer: run_case(
                            settings.for_case(case), exe, case, w, buffer
                        ),
                        work,
                    )
                    # The simulator is deterministic: its twin runs once.
                    new = measured + (
                        simulate_case(settings.for_case(case), case, buffer) if k == 0 else []
                    )
                for row in new:
                    row = {**row, "run": k, "buffer_packets": buffer, "case": "+".join(case)}
                    rows.append(row)
                    if not old:  # appended as measured: a later failure loses nothing already run
                        append_row(jsonl, row)
                        if on_row:
                            on_row(row)
    for row in buffer_sweep(settings):
        rows.append(row)
        if on_row:
            on_row(row)
    # Every case done: the file, in case order, without partial sets an interrupted attempt left.
    from latlab._atomic import write_text

    write_text(jsonl, "".join(json.dumps(r) + "\n" for r in rows))
    return rows


def rtac_equilibrium_mbps(theta: float, rtt_s: float) -> float:
    """RTAC's goodput at its fixed point behind a queue that makes the RTT ``rtt_s`` (Algorithm 1).

    With K = a/(θ − 1)/BDP³ and its own backlog Q̂ = ŵ·(1 − RTT_m/RTT), the
    advertised window equals what it delivers per RTT when
    ŵ^{3/2} = sqrt(a)·(RTT/RTT_m) / sqrt(K·(1 − RTT_m/RTT)).
    """
    a = 1.5
    bdp_pkts = LINK_RATE_BPS * RTT_MIN_S / 8 / MSS_BYTES
    k = a / (theta - 1) / bdp_pkts**3
    r = max(rtt_s / RTT_MIN_S, 1.0 + 1e-9)
    w_pkts = ((a**0.5) * r / (k * (1 - 1 / r)) ** 0.5) ** (2 / 3)
    return w_pkts * MSS_BYTES * 8 / rtt_s / 1e6


def _pick(rows: list[dict], mode: str, receiver: str, with_: str) -> dict | None:
    """The row of ``receiver`` (beside ``with_``), its goodput and RTT the means over the case's runs."""
    found = rows_where(rows, {"mode": mode, "receiver": receiver, "with": with_})
    if not found:
        return None
    mean = {
        k: sum(r[k] for r in found) / len(found)
        for k in ("goodput_mbps", "rtt_mean_ms", "rtt_p50_ms")
    }
    return {**found[0], **mean, "runs": len(found)}


def _shares(rows: list[dict], mode: str, receiver: str) -> list[float]:
    """``receiver``'s goodput over the auto-tuning receiver's beside it, one per run of the case. For the control
    (``receiver`` auto-tuning too) the first flow's over the second's."""

    def runs(r: str, w: str) -> dict[tuple[int, int], dict]:
        return {
            (x.get("run", 0), x.get("flow", 0)): x
            for x in rows
            if x["mode"] == mode and x["receiver"] == r and x["with"] == w
        }

    me, at = runs(receiver, "autotuning"), runs("autotuning", receiver)
    out = []
    for run in sorted({k for k, _ in me}):
        mine = [v for (k, f), v in sorted(me.items()) if k == run]
        theirs = [v for (k, f), v in sorted(at.items()) if k == run]
        if receiver == "autotuning":  # the control: both rows are auto-tuning's
            mine, theirs = mine[:1], mine[1:]
        if mine and theirs and theirs[0]["goodput_mbps"] > 0:
            out.append(mine[0]["goodput_mbps"] / theirs[0]["goodput_mbps"])
    return out


def _control_band_text(rows: list[dict], comp: list[str], control: list[float]) -> str:
    """Which competition shares two equal receivers could have produced: the control's shares, taken either way
    round, span a band; a receiver whose every run lies outside it is told apart from an auto-tuning receiver."""
    lo = min(min(v, 1 / v) for v in control)
    hi = max(max(v, 1 / v) for v in control)
    outside, inside = [], []
    for rc in comp:
        shares = _shares(rows, "real", rc)
        (outside if shares and all(v < lo or v > hi for v in shares) else inside).append(label(rc))
    text = f"Equal receivers kept within {lo:.0%}–{hi:.0%} of each other (either way round) in every run"
    if outside:
        verb = "lies" if len(outside) == 1 else "lie"
        text += f"; {', '.join(outside)} {verb} outside that band in every run, so their shares are the receivers' doing"
    if inside:
        verb = "lies" if len(inside) == 1 else "lie"
        text += (
            f"; {', '.join(inside)} {verb} inside it in at least one run, so those shares cannot be told from what "
            "two equal receivers show"
        )
    return text + "."


def _share(rows: list[dict], mode: str, receiver: str) -> float:
    """The mean over runs of :func:`_shares`."""
    v = _shares(rows, mode, receiver)
    return sum(v) / len(v) if v else float("nan")


def _share_text(rows: list[dict], mode: str, receiver: str) -> str:
    """``54%``, or with several runs ``54% (40–71%, 3 runs)``."""
    v = _shares(rows, mode, receiver)
    if len(v) <= 1:
        return f"{_share(rows, mode, receiver):.0%}"
    return f"{sum(v) / len(v):.0%} ({min(v):.0%}–{max(v):.0%}, {len(v)} runs)"


def bdps(buffer_packets: int) -> str:
    """A buffer in BDPs of the path, for prose: ``10``, ``4``, ``2.5``."""
    return f"{buffer_packets / BDP_PACKETS:.3g}"


def render(rows: list[dict], settings: RealSettings, command: str) -> str:
    """The Markdown section: real beside simulated, alone and in competition, and RTAC's operating point; then the
    study's θ on the shallow buffer and the simulated sweep of the buffer, where they ran."""
    thetas = ", ".join(f"{t:g}" for t in settings.thetas)
    main = settings.buffer_packets
    out = [
        f"Command: `{command}`. A Linux CUBIC sender (timestamps on) downloads to `latlab-net recv` over "
        f"`latlab emulate scenarios/emulate-bloated.toml` (30 Mbit/s, 20 ms each way, a {main}-packet DropTail "
        f"buffer: {bdps(main)} times the BDP); {settings.seconds:g} s per run alone, averages after "
        f"{settings.warmup_s:g} s, {settings.competition_seconds:g} s per competition run, averages after "
        f"{settings.competition_warmup_s:g} s; "
        "RTT is the sender's tcpi_rtt. The simulated column runs the same file with the same controllers and "
        f"parameters (tcp_rmem_max {RMEM_MAX_BYTES // 1024} KB; RTAC at θ = {thetas} with the path's rate; "
        "DRWA λ = 3)."
        + (
            f" The emulator ran at SCHED_FIFO priority {settings.realtime}."
            if settings.realtime
            else ""
        ),
        "",
    ]
    out += _path_tables(
        [r for r in rows if r["mode"] in ("real", "sim") and row_buffer(r) == main], main
    )
    shallow = settings.shallow_buffer_packets
    shallow_rows = [
        r
        for r in rows
        if r["mode"] in ("real", "sim") and shallow and shallow != main and row_buffer(r) == shallow
    ]
    sweep = [r for r in rows if r["mode"] == "sweep"]
    if sweep:
        out += ["", *_sweep_section(sweep)]
    if shallow and shallow_rows:
        out += [
            "",
            f"**The study's θ on a {shallow}-packet buffer ({bdps(shallow)} BDPs, up to "
            f"{shallow * 1500 * 8 / LINK_RATE_BPS * 1e3:.0f} ms of queue).** The same runs on the same path, "
            f"the buffer cut to {shallow} packets, RTAC at the study's θ = 1.38 only.",
            "",
        ]
        out += _path_tables(shallow_rows, shallow)
    return "\n".join(out) + "\n"


def _sweep_section(sweep: list[dict]) -> list[str]:
    """The simulated sweep of the buffer: RTAC's and DRWA's share beside auto-tuning at each depth."""
    out = [
        "**How deep a buffer RTAC at the study's θ stands beside auto-tuning** (simulated, the same path and "
        "runs, the buffer swept; one run per point, the simulator being deterministic):",
        "",
        "| buffer (packets) | BDPs | RTT alone, auto-tuning / RTAC (ms) | RTAC share | fixed point | "
        "DRWA share | control |",
        "|---|---|---|---|---|---|---|",
    ]
    for buf in sorted({int(r["buffer_packets"]) for r in sweep}):

        def one(case: str, receiver: str) -> dict | None:
            found = [
                r
                for r in sweep
                if int(r["buffer_packets"]) == buf
                and r["case"] == case
                and r["receiver"] == receiver
            ]
            return found[-1] if found else None

        def share(case: str) -> float:
            return _sweep_share(sweep, buf, case)

        at_alone, rtac_alone = one("autotuning", "autotuning"), one("rtac@1.38", "rtac@1.38")
        comp = one("autotuning+rtac@1.38", "rtac@1.38")
        fixed = rtac_equilibrium_mbps(1.38, comp["rtt_mean_ms"] / 1e3) if comp else float("nan")
        payload_mbps = LINK_RATE_BPS * MSS_BYTES / 1500 / 1e6
        predicted = (
            (
                "does not bind"
                if fixed >= payload_mbps / 2
                else f"{fixed / (payload_mbps - fixed):.0%}"
            )
            if fixed == fixed
            else "–"
        )
        out.append(
            f"| {buf} | {bdps(buf)} | {(at_alone or {}).get('rtt_mean_ms', float('nan')):.0f} / "
            f"{(rtac_alone or {}).get('rtt_mean_ms', float('nan')):.0f} | {share('autotuning+rtac@1.38'):.0%} | "
            f"{predicted} | {share('autotuning+drwa'):.0%} | {share('autotuning+autotuning'):.0%} |"
        )
    rtac = {int(r["buffer_packets"]): r for r in sweep if r["case"] == "autotuning+rtac@1.38"}
    fair = sorted(b for b in rtac if _sweep_share(sweep, b, "autotuning+rtac@1.38") >= 0.8)
    unfair = sorted(b for b in rtac if _sweep_share(sweep, b, "autotuning+rtac@1.38") < 0.8)
    words = [
        "RTAC's share is its goodput over the auto-tuning receiver's beside it; \"fixed point\" is the share RTAC's "
        "rule predicts at that run's RTT, its window ŵ^{3/2} = sqrt(a)·(RTT/RTT_m)/sqrt(K·(1 − RTT_m/RTT)) "
        "against what the link's payload rate leaves the other flow "
        '("does not bind": that window exceeds half the link, so the two CUBIC senders split it as loss-based '
        "flows do); the control is two auto-tuning receivers."
    ]
    if fair and unfair and max(fair) < min(unfair):
        words.append(
            f"At the study's θ RTAC keeps at least 80 % up to {max(fair)} packets "
            f"({bdps(max(fair))} BDPs) and less from {min(unfair)} packets ({bdps(min(unfair))} BDPs) on: "
            "the deeper the buffer, the further the auto-tuning flow pushes the RTT, and RTAC's emulated "
            "price with it."
        )
    return out + ["", " ".join(words)]


def _sweep_share(sweep: list[dict], buf: int, case: str) -> float:
    """In a sweep case beside auto-tuning, the second flow's goodput over the first's (the auto-tuning flow's); for
    the control, two auto-tuning receivers, the first's over the second's, as in the real runs."""

    def flow(i: int) -> dict | None:
        found = [
            r
            for r in sweep
            if int(r["buffer_packets"]) == buf and r["case"] == case and r["flow"] == i
        ]
        return found[-1] if found else None

    at, me = flow(0), flow(1)
    if case == "autotuning+autotuning":
        at, me = me, at
    return (
        me["goodput_mbps"] / at["goodput_mbps"]
        if at and me and at["goodput_mbps"] > 0
        else float("nan")
    )


def _path_tables(rows: list[dict], buffer_packets: int) -> list[str]:
    """The tables and the verdict of one buffer's runs."""
    nan = float("nan")
    receivers = list(dict.fromkeys(r["receiver"] for r in rows if r["with"] == "alone"))
    out = [
        "| receiver | goodput real / sim (Mbit/s) | RTT mean real / sim (ms) | RTT vs auto-tuning, real |",
        "|---|---|---|---|",
    ]
    pressured = [r for r in rows if r.get("tcp_mem_pressure")]
    at_real = _pick(rows, "real", "autotuning", "alone")
    for rc in receivers:
        real, sim = _pick(rows, "real", rc, "alone"), _pick(rows, "sim", rc, "alone")
        rel = (
            f"{real['rtt_mean_ms'] / at_real['rtt_mean_ms']:.0%}, at "
            f"{real['goodput_mbps'] / at_real['goodput_mbps']:.0%} of its goodput"
            if real and at_real and rc != "autotuning"
            else ""
        )
        out.append(
            f"| {label(rc)} | {(real or {}).get('goodput_mbps', nan):.2f} / "
            f"{(sim or {}).get('goodput_mbps', nan):.2f} | {(real or {}).get('rtt_mean_ms', nan):.0f} / "
            f"{(sim or {}).get('rtt_mean_ms', nan):.0f} | {rel} |"
        )
    out += _estimates_table(rows, receivers)
    comp = [rc for rc in receivers if rc != "autotuning" and _pick(rows, "real", rc, "autotuning")]
    runs = max((r.get("run", 0) + 1 for r in rows if r["mode"] == "real"), default=1)
    if comp:
        out += [
            "",
            "Direct competition: each receiver beside an auto-tuning receiver, through the same buffer"
            + (
                f"; each case run {runs} times, goodput and RTT the means over the runs, the share the mean of "
                "each run's share with its range"
                if runs > 1
                else ""
            )
            + ".",
            "",
            "| receiver | goodput real (Mbit/s), vs auto-tuning | share of auto-tuning's, real / sim | "
            "RTT mean real (ms) |",
            "|---|---|---|---|",
        ]
        for rc in comp:
            me, at = _pick(rows, "real", rc, "autotuning"), _pick(rows, "real", "autotuning", rc)
            out.append(
                f"| {label(rc)} | {me['goodput_mbps']:.2f} vs {(at or {}).get('goodput_mbps', nan):.2f} | "
                f"{_share_text(rows, 'real', rc)} / {_share(rows, 'sim', rc):.0%} | {me['rtt_mean_ms']:.0f} |"
            )
        control = _shares(rows, "real", "autotuning")
        if control:
            even = all(0.8 <= v <= 1.25 for v in control)
            out += [
                "",
                f"Control: two auto-tuning receivers through the same buffer; the first keeps "
                f"{_share_text(rows, 'real', 'autotuning')} of the second's goodput (simulated: "
                f"{_share(rows, 'sim', 'autotuning'):.0%}). "
                + (
                    _control_band_text(rows, comp, control)
                    if even
                    else "Equal receivers split the buffer this unevenly, so a share between these bounds says nothing "
                    "about the receiver."
                ),
            ]
    if pressured:
        runs = sorted({f"{label(r['receiver'])} ({r['with']})" for r in pressured})
        out += [
            "",
            f"**Not a measurement of the receivers:** {', '.join(runs)} ran while the machine's TCP memory was "
            "above net.ipv4.tcp_mem's pressure threshold (other jobs' sockets count too), where Linux shrinks "
            "every receive window to four segments; a second attempt was also under pressure.",
        ]
    rtacs = [rc for rc in comp if split(rc)[0] == "rtac"]
    if rtacs:
        out += [
            "",
            "RTAC's operating point. RTAC advertises the window a Reno sender would hold under an emulated "
            "price q̂ = K·(Q̂ + 1), with Q̂ = ŵ·(1 − RTT_m/RTT) its own backlog and K = a/(θ − 1)/BDP³. Beside a "
            "receiver that lets the buffer fill, the other flow sets the RTT, and RTAC settles where its window "
            "equals what it delivers per RTT: ŵ^{3/2} = sqrt(a)·(RTT/RTT_m)/sqrt(K·(1 − RTT_m/RTT)). At the RTT "
            "measured in each real competition run that fixed point predicts RTAC's goodput:",
            "",
            "| θ | RTT in competition (ms) | RTAC real (Mbit/s) | fixed point (Mbit/s) | share, real | "
            "RTT alone, real (ms) |",
            "|---|---|---|---|---|---|",
        ]
        for rc in rtacs:
            me = _pick(rows, "real", rc, "autotuning")
            solo = _pick(rows, "real", rc, "alone")
            theta = split(rc)[1] or 1.38
            out.append(
                f"| {theta:g} | {me['rtt_mean_ms']:.0f} | {me['goodput_mbps']:.2f} | "
                f"{rtac_equilibrium_mbps(theta, me['rtt_mean_ms'] / 1e3):.2f} | "
                f"{_share_text(rows, 'real', rc)} | {(solo or {}).get('rtt_mean_ms', nan):.0f} |"
            )
        out += ["", _operating_point_verdict(rows, rtacs, buffer_packets)]
    return out


def _estimates_table(rows: list[dict], receivers: list[str]) -> list[str]:
    """Each receiver alone: its controller's estimates against the sender's TCP_INFO (runs that recorded both)."""
    body = []
    for rc in receivers:
        real = _pick(rows, "real", rc, "alone")
        if not real or not np.isfinite(real.get("rcv_rtt_err", np.nan)):
            continue
        body.append(
            f"| {label(rc)} | {100 * real['rcv_rtt_err']:.1f} % ({100 * real['rcv_rtt_bias']:+.1f} %) | "
            f"{100 * real['rcv_win_err']:.0f} % ({100 * real['rcv_win_bias']:+.0f} %) | "
            f"{100 * real['rcv_win_err_flight']:.0f} % | {real['rcv_samples']} |"
        )
    if not body:
        return []
    return [
        "",
        "The receivers' estimates against the real sender: each row of `latlab-net recv` (its controller's RTT and "
        "window estimates, every 100 ms) is paired with the sender's TCP_INFO sample nearest in CLOCK_MONOTONIC "
        f"(within {PAIRING_S * 1e3:.0f} ms; srtt, tcpi_snd_cwnd × MSS, and the data in flight), after the warm-up. "
        "Mean relative error |estimate − sender| / sender, with the signed mean (bias) in brackets; the same "
        "measure as the simulated section 2b.",
        "",
        "| receiver (alone) | RTT estimate vs srtt | window estimate vs cwnd | window estimate vs in flight | "
        "pairs |",
        "|---|---|---|---|---|",
        *body,
    ]


def real_verdicts(
    rows: list[dict], rtac_case: str | None, buffer_packets: int
) -> dict[str, Verdict]:
    """The study's competition findings judged on the real runs through one buffer: RTAC (at ``rtac_case``) beside
    auto-tuning against the study's ≈ 95 %, and DRWA beside auto-tuning against "starves", by the simulated
    study's rules (latlab.studies.rtac.verdicts)."""
    from latlab.studies.rtac.references import RTAC_SHARE
    from latlab.studies.rtac.verdicts import SHARE_AGREE, SHARE_PARTLY, STARVE, STARVE_PARTLY

    where = f"real Linux receivers through one {buffer_packets}-packet buffer"
    out: dict[str, Verdict] = {}
    if rtac_case is not None:
        ref = Reference(
            "real_rtac",
            f"RTAC at θ = {split(rtac_case)[1] or 1.38:g} beside Auto-tuning, {where}: throughput / Auto-tuning's",
            RTAC_SHARE,
            "%",
            fmt="{:.0f}",
            scale=100,
        )
        outcome, rule = within(_share(rows, "real", rtac_case), ref, SHARE_AGREE, SHARE_PARTLY)
        out["rtac"] = Verdict(ref, _share_text(rows, "real", rtac_case), outcome, rule)
    drwa = _share(rows, "real", "drwa")
    ref = Reference("real_drwa", f"DRWA beside Auto-tuning, {where}", words="starves")
    out["drwa"] = Verdict(
        ref,
        f"DRWA/Auto-tuning {_share_text(rows, 'real', 'drwa')}",
        "agrees" if drwa < STARVE else "partly" if drwa < STARVE_PARTLY else "differs",
        f"target below {100 * STARVE:g} % of Auto-tuning's goodput, partly below {100 * STARVE_PARTLY:g} %",
    )
    return out


def _operating_point_verdict(
    rows: list[dict], rtacs: list[str], buffer_packets: int = BUFFER_PACKETS
) -> str:
    """What the measured shares and RTTs say, sentence by sentence; nothing that does not follow from them."""
    at = _pick(rows, "real", "autotuning", "alone")
    parts, below = [], []
    for rc in rtacs:
        theta = split(rc)[1] or 1.38
        solo = _pick(rows, "real", rc, "alone")
        me = _pick(rows, "real", rc, "autotuning")
        cut = 1 - solo["rtt_mean_ms"] / at["rtt_mean_ms"] if solo and at else float("nan")
        parts.append(
            f"θ = {theta:g}: {_share_text(rows, 'real', rc)} beside auto-tuning, the RTT alone cut by "
            f"{cut:.0%}"
        )
        fixed = rtac_equilibrium_mbps(theta, me["rtt_mean_ms"] / 1e3) if me else float("nan")
        if me and me["goodput_mbps"] < 0.7 * fixed:
            below.append((theta, me["goodput_mbps"], fixed, _share(rows, "sim", rc)))
    out = ["Measured (real): " + "; ".join(parts) + "."]
    fair = [split(rc)[1] or 1.38 for rc in rtacs if _share(rows, "real", rc) >= 0.8]
    several = max(len(_shares(rows, "real", rc)) for rc in rtacs) > 1
    if fair:
        out.append(
            f"RTAC holds at least 80 % of the auto-tuning receiver's goodput{' on average' if several else ''} "
            f"at θ = {', '.join(f'{t:g}' for t in fair)}"
            + (
                f"; at the study's θ = 1.38 it does not on this {bdps(buffer_packets)}-BDP buffer, where the "
                "other flow keeps the "
                "queue, and so RTAC's emulated price, high."
                if 1.38 not in fair and any(split(rc)[1] == 1.38 for rc in rtacs)
                else "."
            )
        )
    else:
        out.append(
            f"RTAC keeps less than 80 % of the auto-tuning receiver's goodput at every θ run on this "
            f"{bdps(buffer_packets)}-BDP buffer, where the other flow keeps the queue, and so RTAC's emulated "
            "price, high."
        )
    for theta, got, fixed, sim_share in below:
        out.append(
            f"At θ = {theta:g} the real receiver got {got:.2f} Mbit/s, under 70 % of its fixed point "
            f"({fixed:.2f}), while its simulated twin took {sim_share:.0%} of the auto-tuning flow's goodput: "
            "these runs do not explain that gap."
        )
    study_theta = [rc for rc in rtacs if split(rc)[1] == 1.38]
    if study_theta and _shares(rows, "real", study_theta[0]):
        out.append(real_verdicts(rows, study_theta[0], buffer_packets)["rtac"].sentence())
    drwa = _share(rows, "real", "drwa")
    if drwa == drwa:
        out.append(
            f"DRWA, whose window shrinks as RTT_min/RTT, keeps {drwa:.0%} of the auto-tuning receiver's goodput. "
            + real_verdicts(rows, None, buffer_packets)["drwa"].sentence()
        )
    sim_at = _pick(rows, "sim", "autotuning", "alone")
    if at and sim_at and abs(sim_at["rtt_mean_ms"] / at["rtt_mean_ms"] - 1) > 0.1:
        gaps = []
        for rc in ["drwa", *rtacs]:
            real, sim = _pick(rows, "real", rc, "alone"), _pick(rows, "sim", rc, "alone")
            if real and sim and real["rtt_mean_ms"] > 0:
                gaps.append((label(rc), sim["rtt_mean_ms"] / real["rtt_mean_ms"] - 1))
        out.append(
            f"Auto-tuning alone: mean RTT {at['rtt_mean_ms']:.0f} ms real against "
            f"{sim_at['rtt_mean_ms']:.0f} ms simulated ({sim_at['rtt_mean_ms'] / at['rtt_mean_ms'] - 1:+.0%}), so "
            "the real flow kept the buffer "
            + ("fuller" if at["rtt_mean_ms"] > sim_at["rtt_mean_ms"] else "emptier")
            + " on average than the simulated sawtooth"
            + (
                "; alone, the simulated mean RTT of "
                + ", ".join(f"{name} is {gap:+.0%}" for name, gap in gaps)
                + " off the real one"
                if gaps
                else ""
            )
            + "."
        )
    return " ".join(out)
