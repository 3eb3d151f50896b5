"""Figures of a run, drawn with matplotlib's object API (no pyplot, no global backend switch).

Figures are created as ``matplotlib.figure.Figure`` and saved with the Agg
canvas, so plotting works on headless machines and never changes the
backend of a notebook or GUI session that imported latlab.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from latlab import _atomic, latency
from latlab.results import Results

MAX_CWND_FLOWS = 5
BAR_CHART_MAX_FLOWS = 20


def _floats(series: pd.Series) -> np.ndarray:
    """A numeric column as float64 with NaN for missing values (nullable ints included)."""
    return pd.to_numeric(series, errors="coerce").astype("float64").to_numpy()


def _note(ax, text: str) -> None:  # noqa: ANN001 - matplotlib Axes
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")


def pick_flows(results: Results, limit: int = MAX_CWND_FLOWS) -> list[int]:
    """Up to ``limit`` sampled flow ids, taken round-robin across groups so each group shows."""
    samples = results.flow_samples
    if not len(samples) or "flow_id" not in samples:
        return []
    sampled = sorted(int(f) for f in pd.unique(samples["flow_id"]))
    flows = results.flows
    if "group" not in flows or "flow_id" not in flows:
        return sampled[:limit]
    group_of = dict(zip(flows["flow_id"].astype(int), flows["group"].astype(str)))
    by_group: dict[str, list[int]] = {}
    for fid in sampled:
        by_group.setdefault(group_of.get(fid, ""), []).append(fid)
    picked: list[int] = []
    queues = list(by_group.values())
    while len(picked) < limit and any(queues):
        for q in queues:
            if q and len(picked) < limit:
                picked.append(q.pop(0))
    return sorted(picked)


def _flow_label(results: Results, flow_id: int) -> str:
    flows = results.flows
    if {"flow_id", "group", "cc"} <= set(flows.columns):
        row = flows[flows["flow_id"] == flow_id]
        if len(row):
            group, cc = str(row["group"].iloc[0]), str(row["cc"].iloc[0])
            return f"flow {flow_id} ({group})" if group == cc else f"flow {flow_id} ({group}, {cc})"
    return f"flow {flow_id}"


def draw_cwnd(ax, results: Results) -> None:  # noqa: ANN001
    """cwnd (kB) against time (s) for up to five sampled flows."""
    ax.set_title("Congestion window")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cwnd (kB)")
    samples = results.flow_samples
    flow_ids = pick_flows(results)
    if not flow_ids:
        _note(ax, "no flow samples\n(sample_interval_ms = 0 or no flows)")
        return
    picked = samples[samples["flow_id"].isin(flow_ids)]
    if not np.isfinite(_floats(picked["cwnd_bytes"])).any():
        _note(ax, "no congestion window\n(rate-based flows: TFRC, DFlow)")
        return
    for fid in flow_ids:
        s = samples[samples["flow_id"] == fid].sort_values("time_ns")
        ax.plot(
            _floats(s["time_ns"]) / 1e9,
            _floats(s["cwnd_bytes"]) / 1e3,
            lw=1,
            label=_flow_label(results, fid),
        )
    ax.legend(fontsize="small", loc="upper right")
    ax.set_ylim(bottom=0)


def draw_queue(ax, results: Results) -> None:  # noqa: ANN001
    """Queue occupancy (kB) of the busiest link: most drops, else most departures."""
    ax.set_xlabel("time (s)")
    ax.set_ylabel("queue (kB)")
    link = results.busiest_link()
    if link is None:
        ax.set_title("Queue occupancy")
        _note(ax, "no links")
        return
    name = link.get("name", f"link {link.get('link_id')}")
    drops = link.get("drops_pkts")
    ax.set_title(
        f"Queue of {name}"
        + (f" ({int(drops):,} drops)" if drops is not None and not pd.isna(drops) else "")
    )
    samples = results.link_samples
    if not len(samples) or "link_id" not in samples:
        _note(ax, "no link samples")
        return
    s = samples[samples["link_id"] == link.get("link_id")].sort_values("time_ns")
    if not len(s):
        _note(ax, f"{name} was not sampled")
        return
    ax.plot(_floats(s["time_ns"]) / 1e9, _floats(s["queue_bytes"]) / 1e3, lw=1)
    ax.set_ylim(bottom=0)


def draw_goodput(ax, results: Results) -> None:  # noqa: ANN001
    """Per-flow goodput (Mbps): bars for a handful of flows, a histogram per group for many."""
    flows = results.flows
    ax.set_title("Per-flow goodput")
    if not len(flows) or "goodput_bps" not in flows:
        _note(ax, "no flows")
        return
    goodput_mbps = _floats(flows["goodput_bps"]) / 1e6
    groups = (
        flows["group"].astype(str).to_numpy() if "group" in flows else np.array([""] * len(flows))
    )
    names = list(dict.fromkeys(groups))
    colors = {g: f"C{i % 10}" for i, g in enumerate(names)}
    if len(flows) <= BAR_CHART_MAX_FLOWS:
        ids = (
            flows["flow_id"].astype(int).to_numpy() if "flow_id" in flows else np.arange(len(flows))
        )
        ax.bar(
            [str(i) for i in ids], np.nan_to_num(goodput_mbps), color=[colors[g] for g in groups]
        )
        ax.set_xlabel("flow id")
        ax.set_ylabel("goodput (Mbps)")
        if len(names) > 1:
            from matplotlib.patches import Patch

            ax.legend(handles=[Patch(color=colors[g], label=g) for g in names], fontsize="small")
    else:
        finite = goodput_mbps[np.isfinite(goodput_mbps)]
        bins = np.histogram_bin_edges(finite, bins="auto") if len(finite) else 10
        data = [goodput_mbps[(groups == g) & np.isfinite(goodput_mbps)] for g in names]
        ax.hist(data, bins=bins, stacked=True, label=names, color=[colors[g] for g in names])
        ax.set_xlabel("goodput (Mbps)")
        ax.set_ylabel("flows")
        if len(names) > 1:
            ax.legend(fontsize="small")


def draw_srtt(ax, results: Results) -> None:  # noqa: ANN001
    """Smoothed RTT (ms) against time (s) for the flows the cwnd panel shows."""
    ax.set_title("Smoothed RTT over time (srtt, sampled)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("srtt (ms)")
    samples = results.flow_samples
    flow_ids = pick_flows(results)
    if not flow_ids:
        _note(ax, "no flow samples\n(UDP flows: see the delay distribution)")
        return
    for fid in flow_ids:
        s = samples[samples["flow_id"] == fid].sort_values("time_ns")
        srtt_ms = _floats(s["srtt_ns"]) / 1e6
        srtt_ms[srtt_ms <= 0] = np.nan  # no RTT sample yet
        ax.plot(_floats(s["time_ns"]) / 1e9, srtt_ms, lw=1, label=_flow_label(results, fid))
    measure_from_s = (results.run_info.get("measure_from_ns") or 0) / 1e9
    if measure_from_s > 0:
        ax.axvline(measure_from_s, color="0.6", ls=":", lw=1, label="measuring from")
    ax.legend(fontsize="small", loc="lower right")
    ax.set_ylim(bottom=0)


def _latency_xlabel(metrics: list[str]) -> str:
    return " / ".join(latency.METRIC_LABELS[m] for m in metrics) + " (ms)"


def draw_latency_cdf(ax, results: Results) -> None:  # noqa: ANN001
    """The distribution of every latency sample, per group: a CDF with p50/p95/p99 marked."""
    hist = results.latency_histogram
    ax.set_ylabel("fraction of samples")
    if not len(hist):
        ax.set_title("Latency distribution")
        ax.set_xlabel("RTT (ms)")
        _note(ax, "no latency samples\n(no sampled flows in the measurement window)")
        return
    metrics = [m for m in latency.METRIC_LABELS if (hist["metric"] == m).any()]
    what = latency.METRIC_LABELS[metrics[0]] if len(metrics) == 1 else "Latency"
    ax.set_title(f"{what[0].upper()}{what[1:]} distribution (every sample)")
    ax.set_xlabel(_latency_xlabel(metrics))
    flows = results.flows
    group_of = (
        dict(zip(flows["flow_id"].astype(int), flows["group"].astype(str)))
        if "group" in flows
        else {}
    )
    tagged = hist.assign(group=[group_of.get(int(f), "") for f in hist["flow_id"]])
    markers = dict(zip(latency.PERCENTILES, ("o", "^", "s")))
    for i, ((group, metric), h) in enumerate(tagged.groupby(["group", "metric"], sort=False)):
        pooled = h.groupby("high_ns", sort=True)["count"].sum()
        x_ms = pooled.index.to_numpy(dtype="float64") / 1e6
        y = np.cumsum(pooled.to_numpy(dtype="float64")) / pooled.sum()
        label = f"{group} ({latency.METRIC_LABELS[metric]})" if len(metrics) > 1 else str(group)
        ax.step(x_ms, y, where="post", lw=1.2, color=f"C{i % 10}", label=label)
        p = latency.percentiles_ms(h)
        for q, marker in markers.items():
            ax.plot([p[q]], [q / 100], marker=marker, color=f"C{i % 10}", ms=5, ls="none")
    for q, marker in markers.items():  # legend entries for the markers
        ax.plot([], [], marker=marker, color="0.3", ls="none", label=f"p{q}")
    ax.set_ylim(0, 1.02)
    if _wide(hist["high_ns"].to_numpy("float64") / 1e6, hist["high_ns"].to_numpy("float64") / 1e6):
        ax.set_xscale("log")
    ax.legend(fontsize="small", loc="best")


def draw_latency_percentiles(ax, results: Results) -> None:  # noqa: ANN001
    """p50, p95 and p99 of every sampled flow's latency, beside the goodput panel."""
    by_flow = results.latency_per_flow()
    ax.set_xlabel("flow id")
    if not len(by_flow):
        ax.set_title("Per-flow RTT p50 / p95 / p99")
        ax.set_ylabel("RTT (ms)")
        _note(ax, "no latency samples")
        return
    metrics = [m for m in latency.METRIC_LABELS if (by_flow["metric"] == m).any()]
    what = latency.METRIC_LABELS[metrics[0]] if len(metrics) == 1 else "latency"
    ax.set_title(f"Per-flow {what} p50 / p95 / p99")
    ax.set_ylabel(_latency_xlabel(metrics))
    x = np.arange(len(by_flow))
    p50, p95, p99 = (by_flow[f"p{q}_ms"].to_numpy(dtype="float64") for q in latency.PERCENTILES)
    ax.vlines(x, p50, p99, color="0.75", lw=1)
    ax.plot(x, p50, "o", color="C0", ms=4, label="p50")
    ax.plot(x, p95, "^", color="C1", ms=4, label="p95")
    ax.plot(x, p99, "s", color="C3", ms=4, label="p99")
    step = max(1, len(x) // BAR_CHART_MAX_FLOWS)
    ax.set_xticks(x[::step], [str(f) for f in by_flow["flow_id"].to_numpy()[::step]])
    ax.set_xlim(-0.5, len(x) - 0.5)
    if _wide(p50, p99):
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.legend(fontsize="small", loc="best")


def _wide(low_ms: np.ndarray, high_ms: np.ndarray) -> bool:
    """Whether latencies span more than a factor of ten (then a log axis shows them all)."""
    lo, hi = np.nanmin(low_ms), np.nanmax(high_ms)
    return bool(lo > 0 and hi / lo > 10)


def overview_figure(results: Results) -> Figure:
    """The overview as a Figure (for notebooks: ``display(fig)``): latency in the top row
    (srtt over time, the distribution of every sample, per-flow percentiles), windows, the
    busiest queue and goodput below."""
    fig = Figure(figsize=(16, 9), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 3)
    draw_srtt(axes[0, 0], results)
    draw_latency_cdf(axes[0, 1], results)
    draw_latency_percentiles(axes[0, 2], results)
    draw_cwnd(axes[1, 0], results)
    draw_queue(axes[1, 1], results)
    draw_goodput(axes[1, 2], results)
    info = results.run_info
    fig.suptitle(
        f"{info.get('name', 'scenario')} (seed {info.get('seed')}, {info.get('duration_s', 0):g} s {'emulated' if info.get('emulated') else 'simulated'})"
    )
    return fig


def overview(results: Results, path: str | os.PathLike[str]) -> Path:
    """Save a PNG: latency (srtt over time, distribution, per-flow percentiles), cwnd of up to
    5 flows, queue of the busiest link, per-flow goodput."""
    fig = overview_figure(results)
    return _atomic.write_with(Path(path), lambda tmp: fig.savefig(tmp, format="png", dpi=100))


# ----- wireless access paths -------------------------------------------------

MAX_ACCESS_LINKS = 8


def has_access(results: Results) -> bool:
    """Whether the run has trace-driven, LTE or Wi-Fi links (the access tables are filled)."""
    t = results.tables.get("access_links")
    return t is not None and len(t) > 0


def _rates(samples: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-interval rate (bit/s) from a cumulative byte column, at the interval ends."""
    t = _floats(samples["time_ns"]) / 1e9
    b = _floats(samples[column])
    if len(t) < 2:
        return np.array([]), np.array([])
    dt = np.diff(t)
    ok = dt > 0
    return t[1:][ok], (np.diff(b)[ok] * 8 / dt[ok])


def access_figure(results: Results) -> Figure:
    """Per access link (user or station): capacity offered and rate delivered, queue;
    per flow: the sender's srtt beside the queueing delay at the wireless hop."""
    links = results.tables["access_links"].head(MAX_ACCESS_LINKS)
    samples = results.tables.get("access_samples", pd.DataFrame())
    fsamples = results.tables.get("access_flow_samples", pd.DataFrame())
    fig = Figure(figsize=(15, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax_rate, ax_queue, ax_delay = fig.subplots(1, 3)
    for i, row in enumerate(links.itertuples()):
        color = f"C{i % 10}"
        s = samples[samples["link_id"] == row.link_id] if len(samples) else samples
        if len(s) >= 2:
            t, cap = _rates(s, "offered_bytes")
            ax_rate.plot(t, cap / 1e6, color=color, lw=0.8, alpha=0.5, ls="--")
            t, got = _rates(s, "departures_bytes")
            ax_rate.plot(t, got / 1e6, color=color, lw=1.2, label=f"{row.name}")
            ax_queue.plot(
                _floats(s["time_ns"]) / 1e9,
                _floats(s["queue_bytes"]) / 1e3,
                color=color,
                lw=1,
                label=row.name,
            )
    ax_rate.set(title="capacity offered (dashed) and delivered", xlabel="time (s)", ylabel="Mbit/s")
    ax_queue.set(title="queue at the access hop", xlabel="time (s)", ylabel="kB")
    for ax in (ax_rate, ax_queue):
        if ax.lines:
            ax.legend(fontsize=7, loc="upper right")
        else:
            _note(ax, "no access samples (sample_interval_ms = 0?)")
    if len(fsamples):
        for i, fid in enumerate(sorted(pd.unique(fsamples["flow_id"]))[:MAX_ACCESS_LINKS]):
            f = fsamples[fsamples["flow_id"] == fid]
            t = _floats(f["time_ns"]) / 1e9
            color = f"C{i % 10}"
            srtt = _floats(f["srtt_ns"]) / 1e6
            ax_delay.plot(
                t, np.where(srtt > 0, srtt, np.nan), color=color, lw=1.2, label=f"flow {fid} srtt"
            )
            ax_delay.plot(
                t,
                _floats(f["access_delay_mean_ns"]) / 1e6,
                color=color,
                lw=0.8,
                ls=":",
                label=f"flow {fid} access delay",
            )
        ax_delay.legend(fontsize=7, loc="upper right")
    else:
        _note(ax_delay, "no access flow samples")
    ax_delay.set(title="sender srtt and delay at the access hop", xlabel="time (s)", ylabel="ms")
    info = results.run_info
    fig.suptitle(f"{info.get('name', 'scenario')}: access links (seed {info.get('seed')})")
    return fig


def access(results: Results, path: str | os.PathLike[str]) -> Path:
    """Save a PNG of the wireless access links (see :func:`access_figure`)."""
    fig = access_figure(results)
    return _atomic.write_with(Path(path), lambda tmp: fig.savefig(tmp, format="png", dpi=100))


def has_mptcp(results: Results) -> bool:
    """Whether the run has MPTCP connections (the subflow tables are filled)."""
    t = results.tables.get("subflows")
    return t is not None and len(t) > 0


def subflows_figure(results: Results) -> Figure:
    """Per MPTCP connection (up to four): each subflow's throughput (acknowledged
    bytes per sample interval) over time beside the connection's data-level goodput,
    and the shared receive buffer's out-of-order occupancy."""
    subflows = results.subflows
    samples = results.subflow_samples
    msamples = results.mptcp_samples
    fids = sorted(pd.unique(subflows["flow_id"]))[:4]
    fig = Figure(figsize=(12, 3.6 * max(len(fids), 1)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(max(len(fids), 1), 2, squeeze=False)
    for row, fid in enumerate(fids):
        ax_rate, ax_buf = axes[row]
        paths = subflows[subflows["flow_id"] == fid]
        for i, p in enumerate(paths.itertuples()):
            s = samples[(samples["flow_id"] == fid) & (samples["subflow"] == p.subflow)]
            if len(s) >= 2:
                t, r = _rates(s, "bytes_acked")
                ax_rate.plot(
                    t,
                    r / 1e6,
                    color=f"C{i % 10}",
                    lw=1.2,
                    label=f"{p.path}" + (" (backup)" if p.backup else ""),
                )
        m = msamples[msamples["flow_id"] == fid]
        if len(m) >= 2:
            t, r = _rates(m, "bytes_delivered")
            ax_rate.plot(t, r / 1e6, color="k", lw=0.9, ls="--", label="data level (delivered)")
            ax_buf.plot(
                _floats(m["time_ns"]) / 1e9,
                _floats(m["buffer_occupancy_bytes"]) / 1e3,
                color="k",
                lw=1,
            )
        ax_rate.set(title=f"flow {fid}: throughput per subflow", xlabel="time (s)", ylabel="Mbit/s")
        ax_buf.set(
            title=f"flow {fid}: receive buffer held out of order", xlabel="time (s)", ylabel="kB"
        )
        if ax_rate.lines:
            ax_rate.legend(fontsize=7, loc="upper right")
        else:
            _note(ax_rate, "no subflow samples (sample_interval_ms = 0?)")
    if not fids:
        _note(axes[0][0], "no MPTCP connections")
    info = results.run_info
    fig.suptitle(f"{info.get('name', 'scenario')}: MPTCP subflows (seed {info.get('seed')})")
    return fig


def subflows(results: Results, path: str | os.PathLike[str]) -> Path:
    """Save a PNG of per-subflow throughput over time (see :func:`subflows_figure`)."""
    fig = subflows_figure(results)
    return _atomic.write_with(Path(path), lambda tmp: fig.savefig(tmp, format="png", dpi=100))
