"""A pure-Python stand-in for ``latlab._core`` with the same API and table shapes.

It checks only a little of the schema and invents plausible, seed-determined
numbers. Tests of the Python layer (stepping, conversion, files, plots, CLI
plumbing) use it so they run without the compiled core; anything about
simulation behaviour is tested against the real core.
"""

from __future__ import annotations

import random
import tomllib

import pyarrow as pa

from latlab.errors import ScenarioError, SimulationError

TOP_LEVEL = {
    "name",
    "seed",
    "duration_s",
    "sample_interval_ms",
    "measure_from_s",
    "tcp",
    "topology",
    "flows",
    "outputs",
}
LINKS = ["left->right", "right->left"]

# Tests flip these to exercise the conservation-failure paths: one link's
# counts not adding up, or packets held by no link at all.
BREAK_CONSERVATION = False
BREAK_WHOLE = False


def version() -> str:
    return "fake-0.0"


def _parse(text: str, source: str) -> dict:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{source}: TOML parse error: {e}") from None
    for key in data:
        if key not in TOP_LEVEL:
            raise ScenarioError(
                f"{source}: {key}: unknown field `{key}`, expected one of {sorted(TOP_LEVEL)}"
            )
    if "duration_s" not in data:
        raise ScenarioError(f"{source}: missing field `duration_s`")
    if not isinstance(data["duration_s"], (int, float)) or data["duration_s"] <= 0:
        raise ScenarioError(f"{source}: duration_s: expected a positive number of seconds")
    return data


def validate(toml_text: str, source: str) -> None:
    _parse(toml_text, source)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


class Simulation:
    def __init__(
        self,
        toml_text: str,
        source: str = "<scenario>",
        outdir: str | None = None,
        max_memory_bytes: int | None = None,
    ) -> None:
        d = _parse(toml_text, source)
        self.name = d.get("name", "scenario")
        self.seed = int(d.get("seed", 1))
        self.duration_ns = int(round(d["duration_s"] * 1e9))
        self.now_ns = 0
        self.events = 0
        self.finished = False
        self.outdir = outdir
        self._sample_ns = int(d.get("sample_interval_ms", 100) * 1e6)
        self._flows = [
            (g.get("name", "flows"), g.get("cc", "newreno"), g.get("size_bytes"), i)
            for g in d.get("flows", [])
            for i in range(int(g.get("count", 1)))
        ]
        self.n_flows = len(self._flows)
        self.n_links = len(LINKS)
        self.run_until_calls: list[int] = []

    def run_until(self, t_ns: int) -> None:
        t_ns = min(int(t_ns), self.duration_ns)
        self.run_until_calls.append(t_ns)
        if t_ns > self.now_ns:
            self.events += (t_ns - self.now_ns) // 1_000_000 * max(self.n_flows, 1)
            self.now_ns = t_ns
        if self.now_ns >= self.duration_ns:
            self.finished = True

    def run(self) -> None:
        self.run_until(self.duration_ns)

    def results(self) -> dict[str, bytes]:
        if not self.finished:
            raise SimulationError("results() before the run finished")
        rng = random.Random(self.seed)
        n = self.n_flows
        dur_s = self.duration_ns / 1e9
        goodput = [rng.uniform(1e5, 1e7) for _ in range(n)]
        flows = pa.table(
            {
                "flow_id": pa.array(range(n), pa.uint32()),
                "group": [f[0] for f in self._flows],
                "src": [f"s{f[3]}" for f in self._flows],
                "dst": [f"d{f[3]}" for f in self._flows],
                "cc": [f[1] for f in self._flows],
                "start_ns": pa.array([rng.randrange(10**9) for _ in range(n)], pa.uint64()),
                "size_bytes": pa.array([f[2] for f in self._flows], pa.uint64()),
                "completed": [f[2] is not None for f in self._flows],
                "fct_ns": pa.array(
                    [
                        rng.randrange(10**8, 10**9) if f[2] is not None else None
                        for f in self._flows
                    ],
                    pa.uint64(),
                ),
                "bytes_acked": pa.array([int(g * dur_s / 8) for g in goodput], pa.uint64()),
                "bytes_delivered": pa.array([int(g * dur_s / 8) for g in goodput], pa.uint64()),
                "goodput_bps": goodput,
                "throughput_bps": [g * 1.02 for g in goodput],
                "segments_sent": pa.array([int(g * dur_s / 8000) for g in goodput], pa.uint64()),
                "retransmitted_segments": pa.array(
                    [rng.randrange(100) for _ in range(n)], pa.uint64()
                ),
                "timeouts": pa.array([rng.randrange(3) for _ in range(n)], pa.uint32()),
                "fast_recoveries": pa.array([rng.randrange(30) for _ in range(n)], pa.uint32()),
                "cwnd_bytes": pa.array(
                    [rng.randrange(2000, 200000) for _ in range(n)], pa.uint64()
                ),
                "srtt_ns": pa.array([rng.randrange(10**7, 10**8) for _ in range(n)], pa.uint64()),
            }
        )
        times = list(range(0, self.duration_ns + 1, self._sample_ns)) if self._sample_ns > 0 else []
        fs = [(t, f) for t in times for f in range(min(n, 20))]
        flow_samples = pa.table(
            {
                "time_ns": pa.array([t for t, _ in fs], pa.uint64()),
                "flow_id": pa.array([f for _, f in fs], pa.uint32()),
                "cwnd_bytes": pa.array([rng.randrange(2000, 200000) for _ in fs], pa.uint64()),
                "ssthresh_bytes": pa.array([rng.randrange(2000, 200000) for _ in fs], pa.uint64()),
                "srtt_ns": pa.array([rng.randrange(10**7, 10**8) for _ in fs], pa.uint64()),
                "rwnd_bytes": pa.array([10**6 for _ in fs], pa.uint64()),
                "flight_bytes": pa.array([rng.randrange(0, 100000) for _ in fs], pa.uint64()),
                "bytes_acked": pa.array([t // 1000 for t, _ in fs], pa.uint64()),
                "bytes_delivered": pa.array([t // 1000 for t, _ in fs], pa.uint64()),
                "retransmitted_segments": pa.array([0 for _ in fs], pa.uint64()),
            }
        )
        arrivals = [rng.randrange(10**4, 10**5) for _ in LINKS]
        drops = [rng.randrange(0, 100), 0]
        links = pa.table(
            {
                "link_id": pa.array(range(len(LINKS)), pa.uint32()),
                "name": LINKS,
                "src": [name.split("->")[0] for name in LINKS],
                "dst": [name.split("->")[1] for name in LINKS],
                "rate_bps": [1e7, 1e7],
                "delay_ns": pa.array([20_000_000, 20_000_000], pa.uint64()),
                "qdisc": ["droptail", "droptail"],
                "arrivals_pkts": pa.array(arrivals, pa.uint64()),
                "arrivals_bytes": pa.array([a * 1000 for a in arrivals], pa.uint64()),
                "departures_pkts": pa.array([a - d for a, d in zip(arrivals, drops)], pa.uint64()),
                "departures_bytes": pa.array(
                    [(a - d) * 1000 for a, d in zip(arrivals, drops)], pa.uint64()
                ),
                "drops_pkts": pa.array(drops, pa.uint64()),
                "drops_bytes": pa.array([d * 1000 for d in drops], pa.uint64()),
                "drops_early_pkts": pa.array([0, 0], pa.uint64()),
                "lost_pkts": pa.array([0, 0], pa.uint64()),
                "queued_pkts": pa.array([0, 0], pa.uint64()),
                "utilization": [rng.uniform(0.5, 1.0), rng.uniform(0.0, 0.1)],
                "conservation_ok": [not BREAK_CONSERVATION, True],
                "extra_future_column": [1, 2],
            }
        )
        ls = [(t, link) for t in times for link in range(len(LINKS))]
        link_samples = pa.table(
            {
                "time_ns": pa.array([t for t, _ in ls], pa.uint64()),
                "link_id": pa.array([link for _, link in ls], pa.uint32()),
                "queue_bytes": pa.array([rng.randrange(0, 50000) for _ in ls], pa.uint64()),
                "queue_pkts": pa.array([rng.randrange(0, 50) for _ in ls], pa.uint64()),
                "arrivals_pkts": pa.array([t // 10**6 for t, _ in ls], pa.uint64()),
                "drops_pkts": pa.array([0 for _ in ls], pa.uint64()),
                "departures_bytes": pa.array([t // 1000 for t, _ in ls], pa.uint64()),
                "sojourn_mean_ns": pa.array([rng.randrange(0, 10**7) for _ in ls], pa.uint64()),
                "sojourn_max_ns": pa.array([rng.randrange(0, 10**7) for _ in ls], pa.uint64()),
            }
        )
        run = pa.table(
            {
                "name": [self.name],
                "seed": pa.array([self.seed], pa.uint64()),
                "duration_ns": pa.array([self.duration_ns], pa.uint64()),
                "events": pa.array([self.events], pa.uint64()),
            }
        )
        return {
            "flows": _ipc(flows),
            "flow_samples": _ipc(flow_samples),
            "links": _ipc(links),
            "link_samples": _ipc(link_samples),
            "run": _ipc(run),
        }

    def conservation(self) -> list[dict]:
        out = []
        for i, name in enumerate(LINKS):
            ok = not (BREAK_CONSERVATION and i == 0)
            out.append(
                {
                    "link": name,
                    "arrivals": 100,
                    "departures": 90 if ok else 80,
                    "drops": 10,
                    "lost": 0,
                    "queued": 0,
                    "ok": ok,
                }
            )
        return out

    def conservation_ok(self) -> bool:
        return not BREAK_CONSERVATION and not BREAK_WHOLE
