"""The RTAC study's report: set-up, the auto-tuning sweep, one flow per receiver, competition, three clients,
sender variants, and where latlab differs.

Every sentence that compares with the study comes from a verdict
(:mod:`latlab.studies.rtac.verdicts`); every other number is measured or
derived from the set-up in :mod:`latlab.studies.rtac.cases`, never typed in.
"""

from __future__ import annotations

import pandas as pd

from latlab.studies._markdown import num as _f
from latlab.studies._markdown import table as _table
from latlab.studies._verdict import Verdict, within
from latlab.studies._verdict import summary as verdict_summary
from latlab.studies.rtac import cases as C
from latlab.studies.rtac.metrics import (
    StudyData,
    pair_shares,
    rmem_curve,
    select,
    share_of_autotuning,
    single_figures,
    value_range,
)
from latlab.studies.rtac.references import COMPETITION, PAPER, REFERENCES, SINGLE
from latlab.studies.rtac.verdicts import SHARE_AGREE, SHARE_PARTLY, verdicts

PATH_WORD = {"lte": "LTE", "wifi": "Wi-Fi"}


def _expected_rtt_ms(
    path: str, receiver: str, fig: pd.DataFrame, rmem_kb: float = C.RMEM_MAX_KB
) -> tuple[float, str]:
    """Where a receiver's window should settle on this path, from latlab's own RTT_min and goodput, and how."""
    row = fig.loc[receiver]
    rtt_min, rate_bps = float(row["rtt_min_ms"]), float(row["goodput_mbps"]) * 1e6
    if receiver == "autotuning":
        window_kb = rmem_kb * C.WINDOW_FRACTION
        queue_bytes = C.LTE_USER_QUEUE_BYTES if path == "lte" else C.WIFI_AP_PACKETS * 1500
        queued_ms = min(window_kb * 1024, queue_bytes) * 8 / rate_bps * 1e3
        at = rtt_min + queued_ms
        return at, (
            f"auto-tuning's window grows to its cap ({window_kb:g} KB, half of tcp_rmem_max) and queues "
            f"min(window, buffer) / goodput: RTT ≈ {rtt_min:.0f} + {queued_ms:.0f} = {at:.0f} ms"
        )
    if receiver == "drwa":
        return (
            C.DRWA_LAMBDA * rtt_min,
            f"DRWA settles at λ·RTT_min = {C.DRWA_LAMBDA:g} × {rtt_min:.0f} ms",
        )
    delta = C.PATHS[path].delta_ms
    at = C.RTAC_THETA * (rtt_min + delta)
    return (
        at,
        f"RTAC settles at θ·(RTT_min + Δ) = {C.RTAC_THETA:g} × ({rtt_min:.0f} + {delta:g}) = {at:.0f} ms",
    )


def _why(vs: dict[str, Verdict], flows: pd.DataFrame) -> dict[str, str]:
    """Why each differing verdict differs: the mechanism, with latlab's own numbers."""
    why: dict[str, str] = {}
    for path in C.PATHS:
        fig = single_figures(flows, path)
        for receiver in C.RECEIVERS:
            key = f"single_{path}_{receiver}_rtt"
            if key not in vs or receiver not in fig.index:
                continue
            _, how = _expected_rtt_ms(path, receiver, fig)
            ref_ms = SINGLE[path][receiver][1]
            text = how
            if receiver == "autotuning":
                text += (
                    f"; the study's {ref_ms:g} ms is the same rule on its path's rate and buffer"
                )
            elif receiver == "drwa":
                text += (
                    f"; the study's {ref_ms:g} ms is λ times an RTT_min of {ref_ms / C.DRWA_LAMBDA:.0f} ms, so its "
                    "path's unloaded RTT was shorter than latlab's, or its DRWA had not reached that point"
                )
            else:
                text += "; the path's RTT_min (latlab's set-up, not the study's phones) fixes this point"
            why[key] = text
        for receiver in C.RECEIVERS:
            key = f"single_{path}_{receiver}_tput"
            if key in vs and receiver in fig.index:
                why[key] = (
                    f"latlab's {PATH_WORD[path]} capacity is a modelling choice "
                    f"(≈ {C.PATHS[path].capacity_bps / 1e6:.0f} Mbit/s, see Set-up), not a measurement of "
                    "the study's network"
                )
    for experiment, path in COMPETITION:
        key = f"{experiment}_{path}_rtac"
        if key in vs:
            same = share_of_autotuning(flows, "pair", path, "autotuning")
            noise = (
                (
                    f"two auto-tuning clients on the same path split {value_range(same, '{:.0f}', 100)} %, so "
                    "seeds move a share this much"
                )
                if len(same)
                else ""
            )
            why[key] = _rtac_beside_a_full_queue(flows, experiment, path)
            if noise:
                why[key] += "; " + noise
        key = f"{experiment}_{path}_drwa"
        if key in vs:
            why[key] = (
                "DRWA shrinks its window while RTT_est > λ·RTT_min; a queue held by a loss-based flow "
                "only starves it when that queue's delay exceeds (λ − 1)·RTT_min"
            )
        if path == "wifi":
            for receiver in ("rtac", "drwa"):
                key = f"{experiment}_{path}_{receiver}"
                if key in vs and vs[key].outcome != "agrees":
                    why[key] = "; ".join(
                        x for x in (why.get(key, ""), _ap_depends(flows, receiver)) if x
                    )
    for key, v in vs.items():
        if key.startswith("senders_wifi_") and v.outcome != "agrees":
            receiver = key.split("_")[2]
            why[key] = _ap_depends(flows, receiver)
    return why


def _ap_depends(flows: pd.DataFrame, receiver: str) -> str:
    """The share beside auto-tuning at each shared AP buffer of section 3b (CUBIC), as the condition behind it."""
    cells = []
    for n in (
        sorted(set(flows.loc[flows["experiment"] == "apbuf", "ap_packets"]))
        if "ap_packets" in flows
        else []
    ):
        share = share_of_autotuning(
            flows, "apbuf", "wifi", receiver, ap_packets=n, ap_buffer="shared"
        )
        if len(share):
            cells.append(f"{100 * share.mean():.0f} % at {n:g}")
    if not cells:
        return ""
    own = share_of_autotuning(
        flows, "apbuf", "wifi", receiver, ap_packets=C.WIFI_AP_PACKETS, ap_buffer="per-station"
    )
    per_station = (
        f"; with per-station queues of {C.WIFI_AP_PACKETS} packets it keeps {100 * own.mean():.0f} %"
        if len(own)
        else ""
    )
    return (
        f"the shared AP buffer sets {C.RECEIVERS[receiver]}'s share: beside auto-tuning (CUBIC, section 3b) it "
        f"keeps {', '.join(cells)} packets; this run's AP holds {C.WIFI_AP_PACKETS}{per_station}"
    )


def _rtac_beside_a_full_queue(flows: pd.DataFrame, experiment: str, path: str) -> str:
    """Where RTAC's rule settles at the RTT another flow's queue imposes, against what its flow got.

    With the queue held at RTT by a loss-based flow, Q̂ = (1 − RTT_m*/RTT)·w and the fixed point of
    w = sqrt(a)·(RTT/RTT_m*)/sqrt(K·(Q̂ + 1)) is w³ ≈ a·(RTT/RTT_m*)²/(K·(1 − RTT_m*/RTT)): the window no longer
    depends on the competitor's share, only on the delay it imposes.
    """
    d = select(flows, experiment, path)
    d = d[(d["receiver"] == "rtac") & d["receivers"].str.startswith("autotuning")]
    if not len(d):
        return ""
    rtt_ms, got_mbps = float(d["rtt_mean_ms"].mean()), float(d["goodput_bps"].mean()) / 1e6
    spec = C.PATHS[path]
    fig = single_figures(flows, path)
    rtt_m = (float(fig["rtt_min_ms"].min()) if len(fig) else spec.rtt_min_ms) + spec.delta_ms
    bdp = _bdp(flows, path)
    k = C.RENO_A / (C.RTAC_THETA - 1) / bdp**3
    if rtt_ms <= rtt_m:
        return ""
    w = (C.RENO_A * (rtt_ms / rtt_m) ** 2 / (k * (1 - rtt_m / rtt_ms))) ** (1 / 3)
    rate_mbps = w * C.MSS_BYTES * 8 / (rtt_ms / 1e3) / 1e6
    text = (
        f"at the RTT the shared queue holds ({rtt_ms:.0f} ms, against RTT_m + Δ = {rtt_m:.0f} ms) RTAC's rule "
        f"settles at w³ = a·(RTT/RTT_m*)²/(K·(1 − RTT_m*/RTT)), w = {w:.0f} packets, {rate_mbps:.1f} Mbit/s, "
        f"whatever the other flow's share; its flow got {got_mbps:.1f} Mbit/s"
    )
    if rate_mbps < 1.2 * got_mbps:
        text += (
            ": the window binds there and the auto-tuning flow takes the rest. The study's ≈ 95 % needs a "
            "larger window at the loaded RTT, i.e. a smaller K or a shorter queue than latlab's path holds"
        )
    else:
        text += (
            ": the window does not bind, so the RTAC client's CUBIC sender shares the queue as a loss-based flow "
            "would, and the split is as noisy as between two auto-tuning clients"
        )
    return text


def _estimates_section(flows: pd.DataFrame, settings: C.Settings) -> list[str]:
    """How well each receiver's estimates match its sender: RTT against srtt, window against cwnd and flight."""
    if "rcv_rtt_err" not in flows or not flows["rcv_rtt_err"].notna().any():
        return []
    out = ["## 2b. The receivers' estimates against the sender\n"]
    out.append(
        "A receiver sees neither the sender's cwnd nor its srtt; it estimates the RTT (timestamps, EWMA) and the "
        "window (bytes delivered per RTT). The simulator reads both ends at the same instant every "
        f"{settings.sample_interval_ms:g} ms over [{settings.measure_from_s:g}, {settings.duration_s:g}] s; the "
        "table gives the mean relative error |estimate − sender| / sender over those samples (mean over seeds, "
        "range), and its signed mean (bias). The sender sends min(cwnd, rwnd), so where the receiver's window binds, "
        "cwnd sits above what is in flight: the window estimate is also set against the data in flight.\n"
    )
    rows = []
    for path in C.PATHS:
        d = select(flows, "single", path)
        for receiver in ("autotuning", "drwa", "rtac"):
            r = d[d["receiver"] == receiver]
            if not len(r) or not r["rcv_rtt_err"].notna().any():
                continue
            rows.append(
                [
                    PATH_WORD[path],
                    C.RECEIVERS[receiver],
                    f"{value_range(r['rcv_rtt_err'], '{:.1f}', 100)} %",
                    f"{100 * r['rcv_rtt_bias'].mean():+.1f} %",
                    f"{value_range(r['rcv_win_err'], '{:.0f}', 100)} %",
                    f"{100 * r['rcv_win_bias'].mean():+.0f} %",
                    f"{value_range(r['rcv_win_err_flight'], '{:.0f}', 100)} %",
                ]
            )
    out.append(
        _table(
            [
                "path",
                "receiver (one flow, CUBIC)",
                "RTT estimate vs srtt: mean relative error",
                "bias",
                "window estimate vs cwnd: mean relative error",
                "bias",
                "window estimate vs in flight: mean relative error",
            ],
            rows,
        )
    )
    out.append(
        "\nAuto-tuning's window estimate is its last RTT's count of bytes copied (Linux's per-RTT measure before it "
        "keeps the largest); DRWA's and RTAC's are their EWMAs ŵ. The study's own accuracy figures are not in this "
        "reproduction's references, so these rows carry no verdict.\n"
    )
    return out


def _ap_buffer_section(flows: pd.DataFrame, settings: C.Settings) -> list[str]:
    """The Wi-Fi competition at each AP buffer, shared and per station: RTAC's and DRWA's share beside auto-tuning."""
    out = ["## 3b. Wi-Fi competition against the AP's buffer\n"]
    out.append(
        "The study suspects that its AP did not share one buffer between the stations in its later runs. Two "
        "clients behind one AP, each receiver beside auto-tuning (CUBIC senders), the AP's DropTail buffer at "
        + ", ".join(str(n) for n in settings.ap_packets)
        + f" packets (the path's BDP ≈ {_wifi_bdp_packets():.0f} packets), either **shared** by the stations or "
        '**per station** (`ap.buffer = "per-station"`: that many packets for each station, the stations\' queues '
        "served in turn, one frame each; docs/models/links.md); control: two auto-tuning clients. The study gives "
        "figures for the shared buffer only, so only those rows carry a verdict.\n"
    )
    rows, judged, found = [], [], []
    for buffer, name in C.AP_BUFFERS.items():
        for n in settings.ap_packets:
            row = _ap_buffer_row(flows, buffer, n)
            if row is None:
                continue
            shares, rtt = row
            rows.append(
                [
                    name,
                    str(n),
                    f"{n / _wifi_bdp_packets():.1f}",
                    *(
                        f"{value_range(shares[r], '{:.0f}', 100)} %"
                        for r in ("rtac", "drwa", "autotuning")
                    ),
                    _f(rtt, "{:.0f}"),
                ]
            )
            if buffer == "shared" and len(shares["rtac"]):
                judged.append(_ap_buffer_verdict(shares["rtac"], n))
            elif buffer != "shared":
                found.append(_ap_buffer_finding(flows, shares, n))
    if not rows:
        return []
    out.append(
        _table(
            [
                "AP buffer",
                "packets",
                "BDPs",
                "RTAC / Auto-tuning",
                "DRWA / Auto-tuning",
                "control: Auto-tuning / Auto-tuning",
                "RTT, Auto-tuning vs RTAC (ms)",
            ],
            rows,
        )
    )
    out.append("")
    out += [f"- {v.sentence()}" for v in judged]
    out += [f"- {f}" for f in found if f]
    out.append("")
    return out


def _ap_buffer_row(
    flows: pd.DataFrame, buffer: str, n: int
) -> tuple[dict[str, pd.Series], float] | None:
    """Per receiver, its share beside auto-tuning at one AP buffer; the mean RTT of the auto-tuning + RTAC runs."""
    where = {"ap_packets": n, "ap_buffer": buffer}
    shares = {
        r: share_of_autotuning(flows, "apbuf", "wifi", r, **where)
        for r in ("autotuning", "rtac", "drwa")
    }
    if not any(len(v) for v in shares.values()):
        return None
    d = select(flows, "apbuf", "wifi", receivers="autotuning+rtac", **where)
    return shares, float(d["rtt_mean_ms"].mean()) if len(d) else float("nan")


def _ap_buffer_verdict(share: pd.Series, n: int) -> Verdict:
    """RTAC's share at one shared buffer against the study's competition figure."""
    ref = REFERENCES["pair_wifi_rtac"]
    outcome, rule = within(float(share.mean()), ref, SHARE_AGREE, SHARE_PARTLY)
    measured = f"{value_range(share, '{:.0f}', 100)} % with a {n}-packet shared buffer"
    return Verdict(ref, measured, outcome, rule)


def _ap_buffer_finding(flows: pd.DataFrame, shares: dict[str, pd.Series], n: int) -> str:
    """What latlab finds with per-station queues of ``n`` packets, beside the shared buffer of ``n`` (no reference)."""
    cells = []
    for r in ("rtac", "drwa"):
        own = shares[r]
        if not len(own):
            continue
        shared = share_of_autotuning(flows, "apbuf", "wifi", r, ap_packets=n, ap_buffer="shared")
        beside = (
            f" ({100 * shared.mean():.0f} % with the {n}-packet shared buffer)"
            if len(shared)
            else ""
        )
        cells.append(
            f"{C.RECEIVERS[r]} keeps {100 * own.mean():.0f} % of auto-tuning's goodput{beside}"
        )
    if not cells:
        return ""
    return (
        f"latlab, per-station queues of {n} packets: "
        + "; ".join(cells)
        + " (the study has no figure for per-station queues: no verdict)."
    )


def _wifi_bdp_packets() -> float:
    spec = C.PATHS["wifi"]
    return spec.capacity_bps * spec.rtt_min_ms / 1e3 / 12000


def _senders_section(
    flows: pd.DataFrame, settings: C.Settings, vs: dict[str, Verdict], figures: dict[str, str]
) -> list[str]:
    """Each sender: one flow per receiver, each receiver beside auto-tuning, the three clients; the study's findings."""
    out = ["## 5. Sender variants\n"]
    senders = [s for s in C.SENDERS if s in settings.senders]
    out.append(
        "Each sender (both or all three flows from it) with one flow per receiver, each receiver beside an "
        "auto-tuning client, and the three clients (one of each receiver, the case the study's sender findings are "
        "about). A receiver's window binds only when the sender's cwnd exceeds it.\n"
    )
    for path in C.PATHS:
        rows = []
        for s in senders:
            fig = single_figures(flows, path, s)
            if not len(fig):
                continue
            cells = [C.SENDERS[s]]
            for r in C.RECEIVERS:
                cells.append(
                    f"{fig.loc[r, 'goodput_mbps']:.1f} / {fig.loc[r, 'rtt_mean_ms']:.0f}"
                    if r in fig.index
                    else "–"
                )
            for r in ("drwa", "rtac"):
                share = share_of_autotuning(
                    flows, "pair" if s == "cubic" else "senders", path, r, s
                )
                cells.append(f"{100 * share.mean():.0f} %" if len(share) else "–")
            for r in ("drwa", "rtac"):
                share = share_of_autotuning(
                    flows, "three" if s == "cubic" else "senders", path, r, s, three=True
                )
                cells.append(f"{value_range(share, '{:.0f}', 100)} %" if len(share) else "–")
            rows.append(cells)
        if not rows:
            continue
        out.append(
            f"**{PATH_WORD[path]}**: one flow, throughput (Mbit/s) / RTT mean (ms); beside an auto-tuning client, "
            "throughput / auto-tuning's; three clients, throughput / the auto-tuning client's (mean, range over "
            "seeds)\n"
        )
        out.append(
            _table(
                ["sender"]
                + [C.RECEIVERS[r] for r in C.RECEIVERS]
                + [
                    "DRWA beside Auto-tuning",
                    "RTAC beside Auto-tuning",
                    "three clients: DRWA",
                    "three clients: RTAC",
                ],
                rows,
            )
        )
        out.append("")
        for key in [k for k in vs if k.startswith(f"senders_{path}_")]:
            out.append(f"- {vs[key].sentence()}")
        out += [
            f"- {line}"
            for s in senders
            if s in C.ADDED_SENDERS
            for line in _added_sender(flows, path, s)
        ]
        out.append("")
    for key in ("senders_single_lte_vegas", "senders_single_wifi_vegas"):
        if key in vs:
            out.append(f"- {vs[key].sentence()}")
    out.append("")
    if "senders" in figures:
        out.append(f"![Sender variants]({figures['senders']})\n")
    return out


def _added_sender(flows: pd.DataFrame, path: str, sender: str) -> list[str]:
    """What latlab finds with a sender the study did not run: measured numbers only, no verdict (no reference)."""
    name = C.SENDERS[sender]
    out = []
    fig = single_figures(flows, path, sender)
    if "autotuning" in fig.index:
        auto = fig.loc["autotuning"]
        others = [
            f"{C.RECEIVERS[r]} {fig.loc[r, 'goodput_mbps']:.1f} Mbit/s at {fig.loc[r, 'rtt_mean_ms']:.0f} ms"
            for r in ("drwa", "rtac")
            if r in fig.index
        ]
        out.append(
            f"{name} sender, one flow (the study ran no {name} sender, so latlab's figures stand without a "
            f"verdict): Auto-tuning {auto['goodput_mbps']:.1f} Mbit/s at an RTT mean of "
            f"{auto['rtt_mean_ms']:.0f} ms; " + ", ".join(others) + "."
        )
    shares = {
        r: share_of_autotuning(flows, "senders", path, r, sender, three=True)
        for r in ("drwa", "rtac")
    }
    if all(len(v) for v in shares.values()):
        out.append(
            f"{name} sender, three clients (no verdict): RTAC's throughput / Auto-tuning's "
            f"{value_range(shares['rtac'], '{:.0f}', 100)} %, DRWA's {value_range(shares['drwa'], '{:.0f}', 100)} %."
        )
    return out


def _with_why(vs: dict[str, Verdict], why: dict[str, str]) -> dict[str, Verdict]:
    return {
        k: Verdict(v.reference, v.measured, v.outcome, v.rule, why.get(k, v.why))
        for k, v in vs.items()
    }


def _bdp(flows: pd.DataFrame, path: str) -> float:
    """The BDP (packets of 1500 B) RTAC's K is set for on this path: rate × (RTT_min + Δ), RTT_min as measured."""
    fig = single_figures(flows, path)
    rtt_min = float(fig["rtt_min_ms"].min()) if len(fig) else C.PATHS[path].rtt_min_ms
    spec = C.PATHS[path]
    return spec.capacity_bps * (rtt_min + spec.delta_ms) / 1e3 / 12000


def _distinct(settings: C.Settings) -> int:
    """How many distinct simulations a reproduction with ``settings`` runs."""
    return len(
        {
            (r.path, r.receivers, r.sender, r.rmem_kb, r.ap_packets, r.ap_buffer, r.seed)
            for r in C.runs_of(settings)
        }
    )


def _full_estimate(settings: C.Settings, n_distinct: int, elapsed_s: float) -> str:
    """For a quick run: the full run's time, scaled by its count of simulations and their length."""
    if settings == C.FULL or not n_distinct:
        return ""
    n_full = _distinct(C.FULL)
    scale = n_full / n_distinct * C.FULL.duration_s / settings.duration_s
    return (
        f". The full run (`latlab reproduce rtac`) has {n_full} distinct simulations of {C.FULL.duration_s:g} s; "
        f"scaling this run's time by count and length puts it near {elapsed_s * scale / 60:.0f} minutes on the "
        "same workers"
    )


def _setup(settings: C.Settings, data: StudyData, jobs: int, elapsed_s: float) -> str:
    runs = data.runs
    n_ok = int((runs["status"] == "ok").sum()) if len(runs) else 0
    n_distinct = runs.loc[runs["status"] == "ok", "run_id"].nunique() if len(runs) else 0
    sim_s = (
        data.flows.groupby("run_id")["wall_s"].first().sum() if len(data.flows) else float("nan")
    )
    lte, wifi = C.PATHS["lte"], C.PATHS["wifi"]
    rows = [
        [
            "LTE path",
            f"latlab `cellular` topology: server —{C.LTE_WIRED_DELAY_MS:g} ms, 1 Gbit/s— base station "
            f"—{C.LTE_RADIO_DELAY_MS:g} ms radio— phones; each phone's channel a new log-normal rate every "
            f"{C.LTE_CHANNEL_INTERVAL_MS:g} ms (median {C.LTE_CHANNEL_MEDIAN_BPS / 1e6:g} Mbit/s, log-spread "
            f"{C.LTE_CHANNEL_SIGMA:g}, mean {lte.capacity_bps / 1e6:.0f} Mbit/s) drawn from the seed; "
            f"proportional-fair scheduler, {C.LTE_CELL['resource_blocks']} resource blocks, HARQ "
            f"{100 * C.LTE_CELL['harq_error_prob']:g} % block errors resent after "
            f"{C.LTE_CELL['harq_rtt_ms']:g} ms, frame-timing jitter 0–{C.LTE_CELL['jitter_ms']:g} ms (RTT_min "
            f"varies); per-user RLC queue {C.LTE_USER_QUEUE_BYTES / 1e6:g} MB; propagation RTT "
            f"{lte.rtt_min_ms:g} ms",
        ],
        [
            "LTE indirect competition",
            f"the same cell behind a shared wired bottleneck: server —"
            f"{C.LTE_WIRED_BOTTLENECK_BPS / 1e6:g} Mbit/s, "
            f"{C.LTE_WIRED_BOTTLENECK_PACKETS}-packet DropTail router buffer— gateway, which "
            "feeds the base station and a wired client (CUBIC, fixed 1 GB window) that "
            "downloads beside the phones",
        ],
        [
            "Wi-Fi path",
            f"latlab `wifi` topology: one AP, 802.11n {C.WIFI_PHY_BPS / 1e6:.1f} Mbit/s PHY; without "
            f"aggregation the DCF's per-frame overheads ({C.WIFI_FRAME_OVERHEAD_US:.0f} µs beside "
            f"{C.WIFI_FRAME_DATA_US:.0f} µs of data per 1500-B frame) leave "
            f"{100 * C.WIFI_MAC_EFFICIENCY:.0f} %, so the AP sends at **{C.WIFI_RATE_BPS / 1e6:.1f} "
            f"Mbit/s**; {100 * C.WIFI_FRAME_ERROR_PROB:g} % frame errors (802.11 back-off retries); one "
            f"DropTail buffer of **{C.WIFI_AP_PACKETS} packets shared by all stations**; wired "
            f"{C.WIFI_WIRED_DELAY_MS:g} ms + radio {C.WIFI_RADIO_DELAY_MS:g} ms each way (propagation RTT "
            f"{wifi.rtt_min_ms:g} ms; BDP ≈ {wifi.capacity_bps * wifi.rtt_min_ms / 1e3 / 12000:.0f} "
            "packets)",
        ],
        [
            "sender",
            f"CUBIC (and {', '.join(v for k, v in C.STUDY_SENDERS.items() if k != 'cubic')} in the sender "
            f"experiment, and {', '.join(C.ADDED_SENDERS.values())}, which the study did not run: its rows have no "
            "reference and no verdict), "
            f"`linux` preset, MSS {C.MSS_BYTES} B, timestamps on; every download starts at "
            "t = 0, as the study's clients started theirs together (a delay-based receiver that starts behind "
            "another flow's full buffer takes that delay for RTT_min, sees no queue and never binds its "
            "sender)",
        ],
        [
            "receivers",
            f"tcp_rmem_max {C.RMEM_MAX_KB} KB for all, which caps the advertised window at "
            f"{C.RMEM_MAX_KB * C.WINDOW_FRACTION:g} KB: Linux keeps 2^−tcp_adv_win_scale of the buffer "
            "for overhead (tcp_adv_win_scale = 1, the default of the study's kernels), while latlab's "
            f"rmem_max_bytes caps the window itself, so it is set to half of tcp_rmem_max; DRWA λ = {C.DRWA_LAMBDA:g}, α = 7/8; RTAC "
            f"α = β = {C.RTAC_ALPHA:g}, θ = {C.RTAC_THETA:g}, Δ = {lte.delta_ms:g} ms (LTE), "
            f"{wifi.delta_ms:g} ms (Wi-Fi), and K = a/(θ − 1)·(1/BDP)³ (the study's rule) with BDP = "
            f"rate × (RTT_m + Δ), the rate {lte.capacity_bps / 1e6:.0f} Mbit/s (LTE) or "
            f"{wifi.capacity_bps / 1e6:.1f} Mbit/s (Wi-Fi). The study's K, {lte.rtac_k:g} (LTE) and "
            f"{wifi.rtac_k:g} (Wi-Fi), are this rule at BDPs of {C.k_bdp_packets(lte.rtac_k):.0f} and "
            f"{C.k_bdp_packets(wifi.rtac_k):.0f} packets; latlab's paths give "
            + " and ".join(f"{_bdp(data.flows, p):.0f}" for p in C.PATHS)
            + " packets (K = "
            + " and ".join(
                f"{C.RENO_A / (C.RTAC_THETA - 1) / _bdp(data.flows, p) ** 3:.1e}" for p in C.PATHS
            )
            + "). Kept fixed at the study's values, K would put latlab's operating point below the "
            "stability limit θ ≈ 1.28 where larger BDPs arise ([receiver-window control](../models/receiver-window.md))",
        ],
        [
            "measurement",
            f"goodput delivered to the application over [{settings.measure_from_s:g}, "
            f"{settings.duration_s:g}] s; RTT = the sender's smoothed RTT sampled every "
            f"{settings.sample_interval_ms:g} ms over the same window (queueing included)",
        ],
        [
            "seeds",
            ", ".join(str(s) for s in settings.seeds)
            + "; tables give the mean over seeds and the range",
        ],
        [
            "runs",
            f"{n_ok} run points, {n_distinct} distinct simulations (a scenario shared by two experiments runs "
            f"once); the simulations took {sim_s:.0f} s in all (sum over runs); running and reducing them took "
            f"**{elapsed_s:.0f} s** here on {jobs} worker(s) (runs found finished in runs/ are not redone)"
            + _full_estimate(settings, n_distinct, elapsed_s),
        ],
    ]
    return _table(["", "value"], rows)


def render(
    data: StudyData,
    settings: C.Settings,
    quick: bool,
    jobs: int,
    elapsed_s: float,
    figures: dict[str, str],
    real_section: str | None = None,
) -> str:
    """The report; ``real_section`` is the Markdown of the real Linux runs (``--real``), if they ran."""
    flows = data.flows
    vs = verdicts(flows)
    vs = _with_why(vs, _why(vs, flows))
    out: list[str] = []
    add = out.append
    add("# RTAC: receiver-side TCP adaptive queue control, beside DRWA and Linux auto-tuning\n")
    add(
        f"Reproduction of the RTAC study ({PAPER.citation()}) in latlab's packet simulator. The receivers are "
        "described in latlab's note [receiver-window control](../models/receiver-window.md), the LTE cell and the "
        "Wi-Fi AP in [links](../models/links.md). "
        + (
            "**Quick run** (`latlab reproduce rtac --quick`): shorter runs, fewer seeds and a coarser tcp_rmem_max "
            "grid than the full reproduction; its numbers are not the full run's.\n"
            if quick
            else "Full run (`latlab reproduce rtac`).\n"
        )
    )
    add(verdict_summary(vs.values()))
    add("")

    add("## Set-up\n")
    add(_setup(settings, data, jobs, elapsed_s))
    add("")

    # -- 1. auto-tuning against tcp_rmem_max
    add("## 1. Auto-tuning against tcp_rmem_max\n")
    for path in C.PATHS:
        curve = rmem_curve(flows, path)
        if not len(curve):
            continue
        add(f"**{PATH_WORD[path]}**\n")
        add(
            _table(
                ["tcp_rmem_max (KB)", "throughput (Mbit/s)", "RTT mean (ms)", "RTT 25–75 % (ms)"],
                [
                    [
                        f"{kb:g}",
                        f"{r['goodput_mbps']:.1f} ({r['goodput_lo']:.1f}–{r['goodput_hi']:.1f})",
                        f"{r['rtt_mean_ms']:.0f}",
                        f"{r['rtt_p25_ms']:.0f}–{r['rtt_p75_ms']:.0f}",
                    ]
                    for kb, r in curve.iterrows()
                ],
            )
        )
        add("")
        for key in (f"rmem_{path}", f"rmem_tradeoff_{path}"):
            if key in vs:
                add(f"- {vs[key].sentence()}")
        add("")
    if "rmem" in figures:
        add(f"![Auto-tuning against tcp_rmem_max]({figures['rmem']})\n")

    # -- 2. one flow per receiver
    add("## 2. One flow per receiver\n")
    for path in C.PATHS:
        fig = single_figures(flows, path)
        if not len(fig):
            continue
        add(f"**{PATH_WORD[path]}** (CUBIC sender)\n")
        rows = []
        for r, row in fig.iterrows():
            expected, _ = _expected_rtt_ms(path, str(r), fig)
            study_t, study_rtt = SINGLE[path][str(r)]
            rows.append(
                [
                    C.RECEIVERS[str(r)],
                    f"{row['goodput_mbps']:.1f}",
                    f"{study_t:g}",
                    f"{row['rtt_mean_ms']:.0f}",
                    f"{study_rtt:g}",
                    f"{row['rtt_p25_ms']:.0f} / {row['rtt_p50_ms']:.0f} / {row['rtt_p75_ms']:.0f}",
                    f"{row['rtt_min_ms']:.0f}",
                    f"{expected:.0f}",
                    f"{row['rwnd_kb']:.0f}",
                ]
            )
        add(
            _table(
                [
                    "receiver",
                    "throughput latlab (Mbit/s)",
                    "study",
                    "RTT latlab (ms)",
                    "study",
                    "RTT p25 / p50 / p75 (ms)",
                    "RTT min (ms)",
                    "expected operating RTT (ms)",
                    "advertised window (KB)",
                ],
                rows,
            )
        )
        add("")
        for r in C.RECEIVERS:
            for what in ("tput", "rtt"):
                key = f"single_{path}_{r}_{what}"
                if key in vs:
                    add(f"- {vs[key].sentence()}")
        add("")
    add(
        "The expected operating RTT is where each receiver's rule settles on latlab's path (auto-tuning: "
        "RTT_min + min(window cap, buffer) / goodput; DRWA: λ·RTT_min; RTAC: θ·(RTT_min + Δ)), from the measured RTT_min and "
        "goodput.\n"
    )
    if "single" in figures:
        add(f"![One flow per receiver: throughput and RTT]({figures['single']})\n")

    out += _estimates_section(flows, settings)

    # -- 3 and 4. competition
    add("## 3. Competition, and 4. three clients\n")
    add(
        "Wi-Fi direct competition: two (or three) stations behind one AP, one buffer. LTE indirect competition: "
        "each phone has its own radio queue, but a wired client's download shares the server's wired bottleneck "
        "with them. Client 0 runs the first receiver named.\n"
    )
    for (experiment, path), words in COMPETITION.items():
        cases = ["+".join(p) for p in C.PAIRS] if experiment == "pair" else ["+".join(C.RECEIVERS)]
        rows = []
        for case in cases:
            good = pair_shares(flows, experiment, path, case)
            if not len(good):
                continue
            d = select(flows, experiment, path, receivers=case)
            rtt = d.groupby("group")["rtt_mean_ms"].mean()
            cells = []
            for col in sorted(good.columns, key=lambda c: (c == "wired", c)):
                receiver = "wired client" if col == "wired" else C.RECEIVERS[col.split("-", 1)[1]]
                rt = rtt.get(col, float("nan"))
                cells.append(f"{receiver} {value_range(good[col])} Mbit/s, {_f(rt, '{:.0f}')} ms")
            rows.append([" vs ".join(C.RECEIVERS[r] for r in case.split("+")), "; ".join(cells)])
        if not rows:
            continue
        add(f"**{words}**\n")
        add(_table(["run", "per client: throughput (mean over seeds, range), RTT mean"], rows))
        add("")
        for key in (f"{experiment}_{path}_rtac", f"{experiment}_{path}_drwa"):
            if key in vs:
                add(f"- {vs[key].sentence()}")
        add("")
    if "competition" in figures:
        add(f"![Competition]({figures['competition']})\n")

    # -- the AP's buffer
    out += _ap_buffer_section(flows, settings)

    # -- 5. sender variants
    out += _senders_section(flows, settings, vs, figures)

    # -- 6. real Linux receivers
    add("## 6. Real Linux TCP: the receivers on a real socket, beside the simulator\n")
    if real_section:
        add(real_section)
    else:
        add(
            "Not run here. `latlab reproduce rtac --real` (root, /dev/net/tun, iproute2) adds this section: the "
            "same receivers as `latlab-net recv` on a real Linux TCP socket over an emulated bloated path, each "
            "run beside its simulated twin.\n"
        )

    # -- differences
    add("## Where and why latlab differs\n")
    differing = [v for v in vs.values() if v.outcome in ("partly", "differs")]
    if differing:
        for v in differing:
            add(f"- {v.sentence()}")
    else:
        add("Every verdict agrees.")
    add("")
    add(
        "Modelling choices behind the numbers (not measured in the study, so no verdict): latlab's LTE channel is a "
        "seeded log-normal rate process, not the study's operator network; the Wi-Fi AP's MAC overhead is folded "
        "into its rate; the wired client's window is unbounded; RTT is the sender's smoothed RTT sampled at a fixed "
        "interval, which weights time, not packets.\n"
    )
    return "\n".join(out)
