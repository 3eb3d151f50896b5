"""`Results`: the tables of one finished run, as pandas DataFrames, and their files on disk.

A results folder holds one Parquet file per table, ``conservation.parquet``,
``run.json`` (run facts: name, seed, events, wall time, ...) and
``scenario.toml`` (exactly what was run). ``run.json`` is written last and
lists the tables, so a folder is complete exactly when its ``run.json``
mentions them.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from latlab import _atomic, frames, latency, schema
from latlab.errors import ConservationWarning
from latlab.scenario import Scenario

RUN_JSON = "run.json"
SCENARIO_TOML = "scenario.toml"
CONSERVATION = "conservation"
FORMAT_VERSION = 1


def _plain(value: Any) -> Any:
    """numpy/pandas scalars -> plain Python, so run_info is JSON-friendly."""
    item = getattr(value, "item", None)
    if callable(item):
        value = item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass(eq=False)
class Results:
    """What a run produced. Tables are DataFrames; see :mod:`latlab.schema` for their columns.

    Attributes:
        tables: every table by name (``flows``, ``flow_samples``, ``links``,
            ``link_samples`` and any the core adds).
        run_info: name, seed, duration_s, events, wall_s, events_per_s, ...
        conservation: per link, arrivals/departures/drops/lost/queued and ``ok``.
        scenario: the scenario as run (seed and other overrides applied).
        outdir: where the results were written or loaded from, if anywhere.
    """

    tables: dict[str, pd.DataFrame]
    run_info: dict[str, Any]
    conservation: pd.DataFrame
    scenario: Scenario | None = None
    outdir: Path | None = field(default=None, compare=False)

    # ----- tables -------------------------------------------------------
    def _table(self, name: str) -> pd.DataFrame:
        df = self.tables.get(name)
        if df is not None:
            return df
        return frames.empty_frame(
            schema.TABLES.get(name)
            or schema.MPTCP_TABLES.get(name)
            or schema.OPTIONAL_TABLES.get(name, ())
        )

    @property
    def flows(self) -> pd.DataFrame:
        """One row per flow: final counters, goodput_bps, throughput_bps, fct_ns, ..."""
        return self._table("flows")

    @property
    def receiver_samples(self) -> pd.DataFrame:
        """Per TCP flow with an adaptive receiver (autotuning, DRWA, RTAC) and sample time: the receiver's RTT and
        window estimates beside the sender's cwnd, flight and srtt (empty for other runs)."""
        return self._table("receiver_samples")

    @property
    def cc_samples(self) -> pd.DataFrame:
        """Per TCP flow with a model-based controller (BBR) and sample time: its mode, gains, bw estimate, min RTT,
        cwnd target and pacing rate (empty for other runs)."""
        return self._table("cc_samples")

    @property
    def flow_samples(self) -> pd.DataFrame:
        """cwnd_bytes, srtt_ns, ... of the sampled flows every sample_interval_ms."""
        return self._table("flow_samples")

    @property
    def latency_histogram(self) -> pd.DataFrame:
        """Each sampled flow's RTT (TCP) or one-way delay (UDP, TFRC) samples, bucketed;
        empty for runs without it (emulated, or written by an older latlab)."""
        df = self.tables.get("latency_histogram")
        return df if df is not None else frames.empty_frame(schema.LATENCY_HISTOGRAM)

    def latency_per_flow(self) -> pd.DataFrame:
        """Per sampled flow: metric ("rtt" or "owd"), samples, p50_ms, p95_ms, p99_ms."""
        return latency.per_flow(self.latency_histogram, self.flows)

    def latency_per_group(self) -> pd.DataFrame:
        """Per flow group and metric: flows, samples, p50_ms, p95_ms, p99_ms (samples pooled)."""
        return latency.per_group(self.latency_histogram, self.flows)

    @property
    def links(self) -> pd.DataFrame:
        """One row per unidirectional link: arrivals, departures, drops, utilization, ..."""
        return self._table("links")

    @property
    def link_samples(self) -> pd.DataFrame:
        """queue_bytes, sojourn times, ... of the sampled links every sample_interval_ms."""
        return self._table("link_samples")

    @property
    def subflows(self) -> pd.DataFrame:
        """MPTCP runs: one row per subflow (path) of each connection; empty otherwise."""
        return self._table("subflows")

    @property
    def subflow_samples(self) -> pd.DataFrame:
        """MPTCP runs: bytes_acked (cumulative), cwnd_bytes, srtt_ns per subflow and sample."""
        return self._table("subflow_samples")

    @property
    def mptcp(self) -> pd.DataFrame:
        """MPTCP runs: one row per connection (data-level goodput, receive buffer, HOL blocking)."""
        return self._table("mptcp")

    @property
    def mptcp_samples(self) -> pd.DataFrame:
        """MPTCP runs: receive-buffer occupancy and bytes delivered per connection and sample."""
        return self._table("mptcp_samples")

    @property
    def mptcp_proxy(self) -> pd.DataFrame:
        """MPTCP runs through a proxy: relay occupancy, throttle and server counters per connection."""
        return self._table("mptcp_proxy")

    @property
    def conservation_ok(self) -> bool:
        """True when every link's packets add up (arrivals = departures + drops + lost + queued)
        and, where the core checks it, every live packet is held by some link."""
        ok = bool(self.run_info.get("core_conservation_ok", True))
        if ok and len(self.conservation) and "ok" in self.conservation:
            ok = bool(self.conservation["ok"].astype(bool).all())
        links = self.links
        if ok and len(links) and "conservation_ok" in links:
            ok = bool(links["conservation_ok"].astype(bool).all())
        return ok

    def conservation_failures(self) -> pd.DataFrame:
        """The conservation rows of the links that do not add up (empty when all is well)."""
        if not len(self.conservation) or "ok" not in self.conservation:
            return self.conservation
        return self.conservation[~self.conservation["ok"].astype(bool)]

    # ----- headline numbers ---------------------------------------------
    def busiest_link(self) -> pd.Series | None:
        """The link with the most drops, or if nothing dropped, the most departures."""
        links = self.links
        if not len(links):
            return None
        for column in ("drops_pkts", "departures_pkts", "departures_bytes"):
            if column in links and links[column].fillna(0).max() > 0:
                return links.loc[links[column].fillna(0).idxmax()]
        return links.iloc[0]

    def summary(self) -> dict[str, Any]:
        """The numbers a person looks at first, as plain Python values."""
        flows, links = self.flows, self.links
        busiest = self.busiest_link()
        goodput = (
            flows["goodput_bps"].dropna() if "goodput_bps" in flows else pd.Series(dtype=float)
        )
        return {
            "name": self.run_info.get("name"),
            "seed": self.run_info.get("seed"),
            "duration_s": self.run_info.get("duration_s"),
            "flows": len(flows),
            "mean_goodput_bps": _plain(goodput.mean()) if len(goodput) else None,
            "total_goodput_bps": _plain(goodput.sum()) if len(goodput) else None,
            # Pooled over the sampled flows' samples (see latlab.latency).
            **latency.run_percentiles(self.latency_histogram),
            "busiest_link": None if busiest is None else _plain(busiest.get("name")),
            "busiest_link_utilization": None
            if busiest is None
            else _plain(busiest.get("utilization")),
            "drops_pkts": _plain(links["drops_pkts"].sum())
            if "drops_pkts" in links and len(links)
            else 0,
            # ECN marks (RFC 3168); None when no queue marks (no column).
            "marks_pkts": _plain(links["marks_pkts"].sum()) if "marks_pkts" in links else None,
            "events": self.run_info.get("events"),
            "wall_s": self.run_info.get("wall_s"),
            "events_per_s": self.run_info.get("events_per_s"),
            "conservation_ok": self.conservation_ok,
        }

    def warn_if_not_conserved(self) -> None:
        """Emit a ConservationWarning naming the failing links (a simulator bug; results are suspect)."""
        if self.conservation_ok:
            return
        warnings.warn(
            f"packet conservation FAILED: {self.conservation_problem()}. "
            "This is a simulator bug; treat these results as suspect.",
            ConservationWarning,
            stacklevel=3,
        )

    def conservation_problem(self) -> str:
        """What failed the conservation check, in one phrase ('' when nothing did)."""
        if self.conservation_ok:
            return ""
        bad = self.conservation_failures()
        if "link" in bad and len(bad):
            names = ", ".join(str(n) for n in bad["link"].head(5))
            more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
            return f"on link(s) {names}{more}, arrivals != departures + drops + lost + queued"
        if not self.run_info.get("core_conservation_ok", True):
            return "some live packets are not held by any link"
        return "see links.conservation_ok"

    # ----- building -----------------------------------------------------
    @classmethod
    def from_core(
        cls,
        raw_tables: Mapping[str, bytes],
        conservation: list[Mapping[str, Any]],
        run_info: Mapping[str, Any],
        scenario: Scenario | None,
    ) -> Results:
        """Decode the core's Arrow IPC tables; the one-row ``run`` table is merged into ``run_info``."""
        tables: dict[str, pd.DataFrame] = {}
        info: dict[str, Any] = {}
        for name, data in raw_tables.items():
            table = frames.read_ipc_stream(data)
            if name == "run":
                rows = table.to_pylist()
                info.update(rows[0] if rows else {})
            else:
                tables[name] = frames.to_pandas(table)
        for name, columns in schema.TABLES.items():
            tables.setdefault(name, frames.empty_frame(columns))
        if "wall_s" in info:  # the core's own timing; ours (below) covers the whole run() call
            info["core_wall_s"] = info.pop("wall_s")
        info.update(run_info)
        cons = (
            pd.DataFrame(list(conservation))
            if conservation
            else frames.empty_frame(schema.CONSERVATION)
        )
        res = cls(
            tables=tables,
            run_info={k: _plain(v) for k, v in info.items()},
            conservation=cons,
            scenario=scenario,
        )
        res.run_info["conservation_ok"] = res.conservation_ok
        return res

    # ----- files --------------------------------------------------------
    def write(self, outdir: str | os.PathLike[str]) -> Path:
        """Write every table (Parquet), run.json and scenario.toml into ``outdir``.

        Each file is replaced atomically; other files in ``outdir`` (earlier
        figures, notes) are left alone. Returns the folder.
        """
        outdir = Path(outdir)
        outdir.mkdir(parents=True, exist_ok=True)
        for name, df in self.tables.items():
            frames.write_parquet(df, outdir / f"{name}.parquet")
        frames.write_parquet(self.conservation, outdir / f"{CONSERVATION}.parquet")
        if self.scenario is not None:
            _atomic.write_text(outdir / SCENARIO_TOML, self.scenario.to_toml())
        meta = {
            "format_version": FORMAT_VERSION,
            "run": self.run_info,
            "tables": sorted(self.tables),
            "scenario_source": None if self.scenario is None else self.scenario.source,
        }
        _atomic.write_text(
            outdir / RUN_JSON, json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n"
        )
        self.outdir = outdir
        return outdir

    @classmethod
    def load(cls, outdir: str | os.PathLike[str]) -> Results:
        """Read a folder written by :meth:`write` (or by ``latlab run``)."""
        outdir = Path(outdir)
        meta_path = outdir / RUN_JSON
        if not meta_path.is_file():
            raise FileNotFoundError(f"{outdir}: not a latlab results folder (no {RUN_JSON})")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        tables = {
            name: frames.read_parquet(outdir / f"{name}.parquet") for name in meta.get("tables", [])
        }
        for name, columns in schema.TABLES.items():
            tables.setdefault(name, frames.empty_frame(columns))
        cons_path = outdir / f"{CONSERVATION}.parquet"
        cons = (
            frames.read_parquet(cons_path)
            if cons_path.is_file()
            else frames.empty_frame(schema.CONSERVATION)
        )
        sc_path = outdir / SCENARIO_TOML
        scenario = Scenario.from_toml(sc_path) if sc_path.is_file() else None
        return cls(
            tables=tables,
            run_info=dict(meta.get("run", {})),
            conservation=cons,
            scenario=scenario,
            outdir=outdir,
        )

    def __repr__(self) -> str:
        info = self.run_info
        return (
            f"Results(name={info.get('name')!r}, seed={info.get('seed')}, flows={len(self.flows)}, "
            f"links={len(self.links)}, events={info.get('events')}, wall_s={info.get('wall_s')}, "
            f"conservation_ok={self.conservation_ok})"
        )
