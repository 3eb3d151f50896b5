"""The result tables and their documented columns.

The core may add columns; code in latlab only relies on the ones listed here
and passes any others through untouched. The lists also give empty tables
their shape when a run produced no rows (e.g. sampling turned off).
"""

from __future__ import annotations

#: Per flow, final values. Rates are over the measurement window [measure_from_s, duration_s].
FLOWS = (
    "flow_id",
    "group",
    "src",
    "dst",
    "cc",
    "start_ns",
    "size_bytes",  # null for long-lived flows
    "completed",
    "fct_ns",  # null unless completed; from connection start, handshake included
    "bytes_acked",
    "bytes_delivered",
    "goodput_bps",  # delivered bytes * 8 / window
    "throughput_bps",  # payload bytes sent incl. retransmissions * 8 / window
    "segments_sent",
    "retransmitted_segments",
    "timeouts",
    "fast_recoveries",
    "cwnd_bytes",
    "srtt_ns",
)

#: Per sampled flow and sample time (scenario sample_interval_ms; outputs.max_sampled_flows).
FLOW_SAMPLES = (
    "time_ns",
    "flow_id",
    "cwnd_bytes",
    "ssthresh_bytes",
    "srtt_ns",
    "rwnd_bytes",
    "flight_bytes",
    "bytes_acked",
    "bytes_delivered",
    "retransmitted_segments",
)

#: Per unidirectional link, totals over the run (utilization over the measurement window).
LINKS = (
    "link_id",
    "name",
    "src",
    "dst",
    "rate_bps",
    "delay_ns",
    "qdisc",
    "arrivals_pkts",
    "arrivals_bytes",
    "departures_pkts",
    "departures_bytes",
    "drops_pkts",
    "drops_bytes",
    "drops_early_pkts",
    # "marks_pkts" (ECN marks) follows here when some queue has ecn = true.
    "lost_pkts",
    "queued_pkts",
    "utilization",
    "conservation_ok",
)

#: Per sampled link and sample time; departures_bytes is cumulative, sojourn over the interval.
LINK_SAMPLES = (
    "time_ns",
    "link_id",
    "queue_bytes",
    "queue_pkts",
    "arrivals_pkts",
    "drops_pkts",
    "departures_bytes",
    "sojourn_mean_ns",
    "sojourn_max_ns",
)

#: Per link: packets in = out + dropped + lost + still queued?
CONSERVATION = ("link", "arrivals", "departures", "drops", "lost", "queued", "ok")

#: Table name -> documented columns, for the tables every run has.
TABLES: dict[str, tuple[str, ...]] = {
    "flows": FLOWS,
    "flow_samples": FLOW_SAMPLES,
    "links": LINKS,
    "link_samples": LINK_SAMPLES,
}

#: Per sampled flow: its latency samples in the measurement window (RTT for
#: TCP/MPTCP, one-way delay for UDP/TFRC/DFlow; ``metric`` is "rtt" or "owd")
#: as non-empty log-linear buckets low_ns <= v < high_ns (see latlab.latency).
#: Runs of the simulator only; emulated runs and older results lack it.
LATENCY_HISTOGRAM = ("flow_id", "metric", "low_ns", "high_ns", "count")

#: MPTCP runs only (docs/models/mptcp.md). Per path (subflow) of each MPTCP
#: connection; ``subflow`` is the path's index in the scenario, goodput over the
#: measurement window, cwnd/srtt at the end.
SUBFLOWS = (
    "flow_id",
    "subflow",
    "path",
    "backup",
    "joined",
    "join_after_ns",
    "bytes_sent",
    "bytes_acked",
    "goodput_bps",
    "segments_sent",
    "retransmitted_segments",
    "timeouts",
    "fast_recoveries",
    "cwnd_bytes",
    "srtt_ns",
)

#: Per joined subflow and sample time; bytes_acked is cumulative (rate = diff).
SUBFLOW_SAMPLES = ("time_ns", "flow_id", "subflow", "bytes_acked", "cwnd_bytes", "srtt_ns")

#: Per MPTCP connection: data-level goodput and the shared receive buffer.
MPTCP = (
    "flow_id",
    "paths",
    "subflows_joined",
    "scheduler",
    "recv_buffer_bytes",
    "bytes_delivered",
    "goodput_bps",
    "buffer_occupancy_mean_bytes",  # held out of order, mean over the window
    "buffer_occupancy_max_bytes",
    "hol_blocked_ns",
    "buffer_drops_segments",
    "buffer_drops_bytes",
    "duplicate_bytes",
    "reinjected_segments",
    "reinjected_bytes",
    "opportunistic_retransmits",
    "penalisations",
    "window_limited",
)

#: Per MPTCP connection and sample time: buffer occupancy, bytes delivered (cumulative).
MPTCP_SAMPLES = ("time_ns", "flow_id", "buffer_occupancy_bytes", "bytes_delivered")

#: Per proxied MPTCP connection ([flows.mptcp.proxy]): relay, throttle, server.
MPTCP_PROXY = (
    "flow_id",
    "node",
    "relay_bytes",
    "relay_max_bytes",
    "relay_mean_bytes",
    "bytes_read_upstream",
    "bytes_relayed",
    "upstream_unread_bytes",
    "first_subflow_established_ns",
    "upstream_connect_ns",
    "throttle_installed_ns",
    "shaper_drops_pkts",
    "shaper_max_queue_bytes",
    "server_segments_sent",
    "server_retransmitted_segments",
    "server_timeouts",
)

#: Tables only runs with MPTCP flows have (mptcp_proxy: only with a proxy).
MPTCP_TABLES: dict[str, tuple[str, ...]] = {
    "subflows": SUBFLOWS,
    "subflow_samples": SUBFLOW_SAMPLES,
    "mptcp": MPTCP,
    "mptcp_samples": MPTCP_SAMPLES,
    "mptcp_proxy": MPTCP_PROXY,
}

#: Per TCP flow with an adaptive receiver-window controller and sample time: the receiver's estimates (RTT, the
#: sender's window per RTT) beside the sender's cwnd, flight and srtt at the same instant.
RECEIVER_SAMPLES = (
    "time_ns",
    "flow_id",
    "rwnd_bytes",
    "rcv_rtt_ns",
    "rcv_window_est_bytes",
    "cwnd_bytes",
    "flight_bytes",
    "srtt_ns",
)

#: Per TCP flow with a model-based controller (BBR) and sample time: the controller's model (mode, gains, bw
#: estimate, windowed min RTT, the cwnd it grows toward) and the pacing rate it sets.
CC_SAMPLES = (
    "time_ns",
    "flow_id",
    "mode",
    "pacing_gain",
    "cwnd_gain",
    "bw_bps",
    "min_rtt_ns",
    "target_cwnd_bytes",
    "pacing_rate_bps",
    "lt_bw_in_use",
)

#: Tables only some runs have: receiver_samples only with an adaptive receiver-window controller, cc_samples only
#: with a model-based congestion controller.
OPTIONAL_TABLES: dict[str, tuple[str, ...]] = {
    "receiver_samples": RECEIVER_SAMPLES,
    "cc_samples": CC_SAMPLES,
}

#: Integer columns that may hold nulls; kept as pandas nullable integers (never silently floats).
NULLABLE_INT_COLUMNS = frozenset({"size_bytes", "fct_ns"})
